import Foundation

/// The checks on what a client sends. Each collects per-field messages, so one 400 names
/// every bad field at once.
enum Validation {
    static let maxURLLength = 2_048
    static let maxTitleLength = 200
    static let maxNotesLength = 4_000
    static let maxFolderNameLength = 100
    static let maxSearchLength = 200

    /// An absolute `http` or `https` URL with a host.
    static func url(_ text: String?, _ errors: inout [String: String], field: String = "url") -> String? {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else {
            errors[field] = "required"
            return nil
        }
        guard text.count <= maxURLLength else {
            errors[field] = "longer than \(maxURLLength) characters"
            return nil
        }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            errors[field] = "not an absolute http or https URL"
            return nil
        }
        return text
    }

    /// Required text, trimmed, not empty, at most `maxLength` characters.
    static func text(_ text: String?, _ errors: inout [String: String], field: String, maxLength: Int) -> String? {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else {
            errors[field] = "required"
            return nil
        }
        guard text.count <= maxLength else {
            errors[field] = "longer than \(maxLength) characters"
            return nil
        }
        return text
    }

    /// Optional notes: nil stays nil; blank notes become nil.
    static func notes(_ text: String?, _ errors: inout [String: String]) -> String? {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
        guard text.count <= maxNotesLength else {
            errors["notes"] = "longer than \(maxNotesLength) characters"
            return nil
        }
        return text
    }

    /// A folder or bookmark id: required, not blank.
    static func id(_ text: String?, _ errors: inout [String: String], field: String) -> String? {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else {
            errors[field] = "required"
            return nil
        }
        return text
    }
}

/// The filters and page of `GET /bookmarks`, from its query parameters.
struct BookmarkQuery: Equatable, Sendable {
    /// The order of a listing; ties are broken by id, so pages never overlap.
    enum Sort: String, Sendable, CaseIterable {
        case newest = "-created"
        case oldest = "created"
        case title = "title"
        case titleDescending = "-title"
    }

    static let defaultLimit = 20
    static let maxLimit = 100
    static let parameters = ["folder", "q", "sort", "limit", "offset"]

    /// Only the bookmarks of this folder.
    var folderID: String?
    /// Only the bookmarks whose title or URL contains this text (ASCII letters in any case).
    var search: String?
    var sort: Sort = .newest
    var limit: Int = defaultLimit
    var offset: Int = 0

    /// Parses the query parameters; a bad or unknown parameter is a validation error naming it.
    static func parse(_ parameters: [(String, String)]) throws -> BookmarkQuery {
        var query = BookmarkQuery()
        var errors: [String: String] = [:]
        for (name, value) in parameters {
            switch name {
            case "folder":
                query.folderID = Validation.id(value, &errors, field: "folder")
            case "q":
                if value.count > Validation.maxSearchLength {
                    errors["q"] = "longer than \(Validation.maxSearchLength) characters"
                } else if !value.isEmpty {
                    query.search = value
                }
            case "sort":
                if let sort = Sort(rawValue: value) {
                    query.sort = sort
                } else {
                    errors["sort"] = "one of \(Sort.allCases.map(\.rawValue).joined(separator: ", "))"
                }
            case "limit":
                if let limit = Int(value), (1...maxLimit).contains(limit) {
                    query.limit = limit
                } else {
                    errors["limit"] = "a whole number from 1 to \(maxLimit)"
                }
            case "offset":
                if let offset = Int(value), offset >= 0 {
                    query.offset = offset
                } else {
                    errors["offset"] = "a whole number from 0 up"
                }
            default:
                errors[name] = "unknown parameter; the parameters are \(Self.parameters.joined(separator: ", "))"
            }
        }
        if !errors.isEmpty { throw APIError.validation(errors) }
        return query
    }
}
