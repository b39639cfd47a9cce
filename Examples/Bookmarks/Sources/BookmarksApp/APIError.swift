import Foundation
import Hummingbird
import Logging
import Unity

/// An error the API answers with a status and a JSON body:
/// `{"error": "<kind>", "message": "…", …}`.
struct APIError: Error, HTTPResponseError, Sendable {
    var status: HTTPResponse.Status
    var body: Body
    /// Sent as `Retry-After` (seconds) when set.
    var retryAfter: Int?

    struct Body: Encodable, Sendable {
        /// A stable word a client can switch on: `validation`, `invalid_json`, `not_found`,
        /// `conflict`, `database_unavailable`, `internal`.
        var error: String
        var message: String
        /// Per-field messages of a validation error.
        var fields: [String: String]?
        /// The database constraint a conflict broke.
        var constraint: String?
        /// The row already holding the key a conflict was about.
        var existingBookmark: BookmarkJSON?
        var existingFolder: FolderSummaryJSON?
    }

    /// A folder named in a conflict.
    struct FolderSummaryJSON: Encodable, Sendable {
        var id: String
        var name: String
    }

    static func validation(_ fields: [String: String]) -> APIError {
        let list = fields.keys.sorted().map { "\($0): \(fields[$0] ?? "")" }.joined(separator: "; ")
        return APIError(status: .badRequest, body: Body(error: "validation", message: "invalid request: \(list)", fields: fields))
    }

    static func invalidJSON(_ message: String) -> APIError {
        APIError(status: .badRequest, body: Body(error: "invalid_json", message: message))
    }

    static func notFound(_ message: String) -> APIError {
        APIError(status: .notFound, body: Body(error: "not_found", message: message))
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try jsonResponse(body, status: status)
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    /// The API's answer to any error a handler threw: the database's typed errors become
    /// 409 (a unique key taken), 400 (a folder that does not exist) or 503 (the database
    /// cannot be reached now); anything unexpected is a 500 whose detail goes to the log only.
    static func from(_ error: any Error, logger: Logger) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as ModelError<Bookmark>:
            guard case .duplicate(let existing) = error else { break }
            return APIError(status: .conflict, body: Body(
                error: "conflict",
                message: "a bookmark with the URL \(existing.url) is already in this folder",
                constraint: "bookmarks_url_per_folder", existingBookmark: BookmarkJSON(existing)))
        case let error as ModelError<Folder>:
            guard case .duplicate(let existing) = error else { break }
            return APIError(status: .conflict, body: Body(
                error: "conflict", message: "a folder named \(existing.name) already exists",
                constraint: "folders_name_unique", existingFolder: FolderSummaryJSON(id: existing.id, name: existing.name)))
        case let error as DatabaseError:
            switch error {
            case .constraintViolation(.unique, let context):
                // Two requests raced for the same key: the loser's statement failed and its
                // transaction was rolled back.
                return APIError(status: .conflict, body: Body(
                    error: "conflict", message: "the change would break a unique key", constraint: context.constraint))
            case .constraintViolation(.foreignKey, _):
                return .validation(["folderId": "no folder has this id"])
            case .connectionLost, .connectionFailed, .poolTimeout, .busy, .cancelled:
                logger.warning("database unavailable", metadata: ["error": "\(error)"])
                return APIError(status: .serviceUnavailable, body: Body(
                    error: "database_unavailable", message: "the database cannot be reached now; try again"),
                    retryAfter: 1)
            default:
                break
            }
        default:
            break
        }
        logger.error("request failed", metadata: ["error": "\(error)"])
        return APIError(status: .internalServerError, body: Body(error: "internal", message: "internal error"))
    }
}

/// Turns every error a route throws into the API's JSON error (see ``APIError/from(_:logger:)``).
/// The router's own errors (no such route, a method not allowed) pass through.
struct APIErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            throw error
        } catch {
            return try APIError.from(error, logger: context.logger).response(from: request, context: context)
        }
    }
}

/// A JSON response with the service's encoder.
func jsonResponse(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
    let data = try JSONCoding.encoder.encode(value)
    return Response(
        status: status,
        headers: [.contentType: "application/json; charset=utf-8"],
        body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
}
