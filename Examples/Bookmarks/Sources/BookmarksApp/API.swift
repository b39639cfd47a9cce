import Foundation

// The JSON the service reads and writes. The tables' rows (``Folder``, ``Bookmark``) are not
// sent as they are: the API's names are camelCase and it never shows `existsInDatabase`.

/// A bookmark as the API shows it.
struct BookmarkJSON: Codable, Equatable, Sendable {
    var id: String
    var folderId: String
    var url: String
    var title: String
    var notes: String?
    var createdAt: Date
    var updatedAt: Date

    init(_ bookmark: Bookmark) {
        id = bookmark.id
        folderId = bookmark.folderID
        url = bookmark.url
        title = bookmark.title
        notes = bookmark.notes
        createdAt = bookmark.createdAt
        updatedAt = bookmark.updatedAt
    }
}

/// A folder as the API shows it, with the number of bookmarks in it.
struct FolderJSON: Codable, Equatable, Sendable {
    var id: String
    var name: String
    var createdAt: Date
    var bookmarkCount: Int
}

/// One page of a bookmark listing.
struct BookmarkPageJSON: Codable, Equatable, Sendable {
    /// The bookmarks of this page, in the order asked for.
    var items: [BookmarkJSON]
    /// How many bookmarks match the filters, on every page.
    var total: Int
    var limit: Int
    var offset: Int
}

/// The body of `POST /folders`.
struct NewFolderJSON: Decodable {
    var name: String?
}

/// The body of `POST /bookmarks`.
struct NewBookmarkJSON: Decodable {
    var folderId: String?
    var url: String?
    var title: String?
    var notes: String?
}

/// The body of `PATCH /bookmarks/{id}`: a field left out is left as it is; `"notes": null`
/// clears the notes.
struct BookmarkPatchJSON: Decodable {
    var folderId: String?
    var url: String?
    var title: String?
    /// nil: not given; `.some(nil)`: given as null.
    var notes: String??

    enum CodingKeys: String, CodingKey { case folderId, url, title, notes }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        folderId = try container.decodeIfPresent(String.self, forKey: .folderId)
        url = try container.decodeIfPresent(String.self, forKey: .url)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        if container.contains(.notes) {
            notes = .some(try container.decodeNil(forKey: .notes) ? nil : container.decode(String.self, forKey: .notes))
        } else {
            notes = nil
        }
    }
}

/// The body of `POST /bookmarks/move`.
struct MoveJSON: Decodable {
    var ids: [String]?
    var folderId: String?
}

/// The answer to `POST /bookmarks/move`.
struct MovedJSON: Codable, Equatable {
    var moved: Int
}

/// The answer to `GET /health`.
struct HealthJSON: Codable, Equatable {
    /// `ok` or `unavailable`.
    var status: String
    /// `sqlite` or `postgresql`.
    var backend: String
    /// Why the database could not answer, when it could not.
    var reason: String?
}

/// The JSON coders of the service: ISO 8601 dates with milliseconds, sorted keys.
enum JSONCoding {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        }
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 date: \(text)")
            }
            return date
        }
        return decoder
    }()
}
