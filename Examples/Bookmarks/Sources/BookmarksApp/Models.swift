import Foundation
import UnityRowCoding

/// A folder of bookmarks: a row of `folders`.
///
/// The SQL-first flavor: the table is written in the migration files, and this struct maps
/// its columns (by `CodingKeys`); `@RowCoded` generates the row coding, so fetches and saves
/// read and write the columns by position, with no `Codable` container.
@RowCoded
struct Folder: ModelDef, Equatable {
    enum CodingKeys: String, CodingKey {
        case id, name, createdAt = "created_at", existsInDatabase
    }

    var id: String
    var name: String
    var createdAt: Date

    static let tableName = "folders"
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    /// A new folder whose name is taken is a duplicate of that folder.
    var secondaryKeys: [any CodingKey] { [CodingKeys.name] }
    /// A duplicate leaves the stored row as it is (and the save throws `ModelError.duplicate`):
    /// a request that meets a taken key changes nothing.
    static let syncable = true
}

/// A bookmark in a folder: a row of `bookmarks`.
@RowCoded
struct Bookmark: ModelDef, Equatable {
    enum CodingKeys: String, CodingKey {
        case id, folderID = "folder_id", url, title, notes
        case createdAt = "created_at", updatedAt = "updated_at", existsInDatabase
    }

    var id: String
    var folderID: String
    var url: String
    var title: String
    var notes: String?
    var createdAt: Date
    var updatedAt: Date

    static let tableName = "bookmarks"
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    /// A URL appears once per folder (the table's `bookmarks_url_per_folder` constraint).
    var secondaryKeys: [any CodingKey] { [CodingKeys.folderID, CodingKeys.url] }
    /// A duplicate leaves the stored row as it is: see ``Folder/syncable``.
    static let syncable = true
}
