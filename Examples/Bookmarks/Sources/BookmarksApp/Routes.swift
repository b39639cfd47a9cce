import Foundation
import Hummingbird
import Unity

/// The API's routes.
///
/// | method and path | does |
/// |---|---|
/// | `GET /health` | 200 when the database answers `SELECT 1` within 2 s, else 503 |
/// | `GET /folders` | every folder, with its number of bookmarks |
/// | `POST /folders` | creates a folder (`{"name"}`); 409 when the name is taken |
/// | `DELETE /folders/{id}` | deletes a folder and its bookmarks |
/// | `GET /bookmarks` | lists bookmarks: `folder`, `q`, `sort`, `limit`, `offset` |
/// | `POST /bookmarks` | creates one (`{"folderId", "url", "title", "notes"}`); 409 when the URL is in that folder |
/// | `GET /bookmarks/{id}` | one bookmark |
/// | `PATCH /bookmarks/{id}` | changes some of its fields |
/// | `DELETE /bookmarks/{id}` | deletes it |
/// | `POST /bookmarks/move` | moves several to a folder, all or none (`{"ids", "folderId"}`) |
struct BookmarkRoutes: Sendable {
    let store: BookmarkStore
    let backendName: String
    /// The largest request body read.
    static let maxBodySize = 64 * 1024
    static let healthTimeout: Duration = .seconds(2)

    func add(to router: Router<some RequestContext>) {
        router.get("health") { _, _ in try await health() }
        router.get("folders") { _, _ in try jsonResponse(try await store.folders()) }
        router.post("folders") { request, context in try await createFolder(request, context) }
        router.delete("folders/:id") { _, context in
            let id = try context.parameters.require("id")
            guard try await store.deleteFolder(id: id) else { throw APIError.notFound("no folder has id \(id)") }
            return Response(status: .noContent)
        }
        router.get("bookmarks") { request, _ in
            let query = try BookmarkQuery.parse(request.uri.queryParameters.map { (String($0.key), String($0.value)) })
            return try jsonResponse(try await store.list(query))
        }
        router.post("bookmarks") { request, context in try await createBookmark(request, context) }
        router.post("bookmarks/move") { request, context in try await move(request, context) }
        router.get("bookmarks/:id") { _, context in
            let id = try context.parameters.require("id")
            guard let bookmark = try await store.bookmark(id: id) else { throw APIError.notFound("no bookmark has id \(id)") }
            return try jsonResponse(BookmarkJSON(bookmark))
        }
        router.patch("bookmarks/:id") { request, context in try await updateBookmark(request, context) }
        router.delete("bookmarks/:id") { _, context in
            let id = try context.parameters.require("id")
            guard try await store.delete(id: id) else { throw APIError.notFound("no bookmark has id \(id)") }
            return Response(status: .noContent)
        }
    }

    func health() async throws -> Response {
        do {
            try await store.ping(timeout: Self.healthTimeout)
            return try jsonResponse(HealthJSON(status: "ok", backend: backendName))
        } catch {
            return try jsonResponse(HealthJSON(status: "unavailable", backend: backendName, reason: "\(error)"),
                                    status: .serviceUnavailable)
        }
    }

    func createFolder(_ request: Request, _ context: some RequestContext) async throws -> Response {
        let input = try await decode(NewFolderJSON.self, request)
        var errors: [String: String] = [:]
        let name = Validation.text(input.name, &errors, field: "name", maxLength: Validation.maxFolderNameLength)
        guard let name, errors.isEmpty else { throw APIError.validation(errors) }
        let folder = try await store.createFolder(name: name)
        return try jsonResponse(FolderJSON(id: folder.id, name: folder.name, createdAt: folder.createdAt, bookmarkCount: 0),
                                status: .created)
    }

    func createBookmark(_ request: Request, _ context: some RequestContext) async throws -> Response {
        let input = try await decode(NewBookmarkJSON.self, request)
        var errors: [String: String] = [:]
        let folderID = Validation.id(input.folderId, &errors, field: "folderId")
        let url = Validation.url(input.url, &errors)
        let title = Validation.text(input.title, &errors, field: "title", maxLength: Validation.maxTitleLength)
        let notes = Validation.notes(input.notes, &errors)
        guard let folderID, let url, let title, errors.isEmpty else { throw APIError.validation(errors) }
        let bookmark = try await store.create(folderID: folderID, url: url, title: title, notes: notes)
        var response = try jsonResponse(BookmarkJSON(bookmark), status: .created)
        response.headers[.location] = "/bookmarks/\(bookmark.id)"
        return response
    }

    func updateBookmark(_ request: Request, _ context: some RequestContext) async throws -> Response {
        let id = try context.parameters.require("id")
        let input = try await decode(BookmarkPatchJSON.self, request)
        var errors: [String: String] = [:]
        var change = BookmarkStore.Change()
        if input.folderId != nil { change.folderID = Validation.id(input.folderId, &errors, field: "folderId") }
        if input.url != nil { change.url = Validation.url(input.url, &errors) }
        if input.title != nil {
            change.title = Validation.text(input.title, &errors, field: "title", maxLength: Validation.maxTitleLength)
        }
        if let notes = input.notes { change.notes = .some(Validation.notes(notes, &errors)) }
        guard errors.isEmpty else { throw APIError.validation(errors) }
        guard let bookmark = try await store.update(id: id, change) else { throw APIError.notFound("no bookmark has id \(id)") }
        return try jsonResponse(BookmarkJSON(bookmark))
    }

    func move(_ request: Request, _ context: some RequestContext) async throws -> Response {
        let input = try await decode(MoveJSON.self, request)
        var errors: [String: String] = [:]
        let folderID = Validation.id(input.folderId, &errors, field: "folderId")
        let ids = input.ids ?? []
        if ids.isEmpty { errors["ids"] = "at least one bookmark id" }
        if ids.count > BookmarkQuery.maxLimit { errors["ids"] = "at most \(BookmarkQuery.maxLimit) ids" }
        guard let folderID, errors.isEmpty else { throw APIError.validation(errors) }
        do {
            return try jsonResponse(MovedJSON(moved: try await store.move(ids: ids, toFolder: folderID)))
        } catch BookmarkStore.MoveFailure.missingBookmarks(let missing) {
            throw APIError.notFound("no bookmark has id \(missing.joined(separator: ", ")); nothing was moved")
        }
    }

    /// The request's JSON body as `T`; a body that is not such JSON is a 400 saying why.
    func decode<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: Self.maxBodySize)
        } catch {
            throw APIError(status: .contentTooLarge, body: .init(
                error: "invalid_json", message: "the body is larger than \(Self.maxBodySize) bytes"))
        }
        do {
            return try JSONCoding.decoder.decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError.invalidJSON("the body is not the JSON expected: \(Self.describe(error))")
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.isEmpty ? "the body" : context.codingPath.map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case .typeMismatch(_, let context): return "\(path(context)): wrong type"
        case .valueNotFound(_, let context): return "\(path(context)): missing value"
        case .keyNotFound(let key, _): return "\(key.stringValue): missing"
        case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}
