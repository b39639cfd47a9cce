import Foundation
import UnityPredicates

/// Models shared by the Predicates*Tests suites.
enum PKind: String, SupportedAttributeType, DatabaseValueConvertible, Codable, CaseIterable {
    // Not Comparable: it compares and sorts by its raw value.
    case zeta, alpha, mid
}

enum PLevel: Int, SupportedAttributeType {
    case low = 1, high = 3, middle = 2
}

struct PItem: ManagedObjectConvertible, Equatable {
    var id = 0
    var i8: Int8 = 0
    var i16: Int16 = 0
    var i32: Int32 = 0
    var i64: Int64 = 0
    var double = 0.0
    var float: Float = 0
    var flag = false
    var name = ""
    var note: String?
    var date = Date(timeIntervalSince1970: 0)
    var uuid = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    var price: Decimal = 0
    var blob = Data()
    var url = URL(string: "https://example.com")!
    var kind = PKind.mid
    var level: PLevel?
    var amount: Int?

    static let entityName = "PItem"
    static let attributes: Set<Attribute<PItem>> = [
        Attribute(\.id, "id", unique: true), Attribute(\.i8, "i8"), Attribute(\.i16, "i16"), Attribute(\.i32, "i32"),
        Attribute(\.i64, "i64"), Attribute(\.double, "double"), Attribute(\.float, "float"), Attribute(\.flag, "flag"),
        Attribute(\.name, "name"), Attribute(\.note, "note"), Attribute(\.date, "date"), Attribute(\.uuid, "uuid"),
        Attribute(\.price, "price"), Attribute(\.blob, "blob"), Attribute(\.url, "url"), Attribute(\.kind, "kind"),
        Attribute(\.level, "level"), Attribute(\.amount, "amount"),
    ]
}

/// The seed's `T`.
struct T: ManagedObjectConvertible, Equatable {
    var marker = ""
    var amount = 0
    var name = ""
    static let entityName = "T"
    static let attributes: Set<Attribute<T>> = [
        Attribute(\.marker, "marker"), Attribute(\.amount, "amount"), Attribute(\.name, "name"),
    ]
}

struct PAuthor: ManagedObjectConvertible, Equatable {
    var name = ""
    var email: String?
    static let entityName = "PAuthor"
    static let attributes: Set<Attribute<PAuthor>> = [Attribute(\.name, "name"), Attribute(\.email, "email", unique: true)]
    struct Relations: RelationSet {
        let books = ToManyRelation<PBook>("books", inverse: "author", deleteRule: .cascade)
        let favorites = ToManyOrderedRelation<PBook>("favorites")
        let agent = ToOneRelation<PAgent>("agent", inverse: "clients", deleteRule: .nullify)
        var all: [RelationDeclaration] { [books.declaration, favorites.declaration, agent.declaration] }
    }
    static let relations = Relations()
}

struct PBook: ManagedObjectConvertible, Equatable {
    var title = ""
    static let entityName = "PBook"
    static let attributes: Set<Attribute<PBook>> = [Attribute(\.title, "title")]
    struct Relations: RelationSet {
        let author = ToOneRelation<PAuthor>("author", inverse: "books")
        var all: [RelationDeclaration] { [author.declaration] }
    }
    static let relations = Relations()
}

struct PAgent: ManagedObjectConvertible, Equatable {
    var name = ""
    static let entityName = "PAgent"
    static let attributes: Set<Attribute<PAgent>> = [Attribute(\.name, "name")]
    struct Relations: RelationSet {
        let clients = ToManyRelation<PAuthor>("clients", inverse: "agent", deleteRule: .deny)
        var all: [RelationDeclaration] { [clients.declaration] }
    }
    static let relations = Relations()
}

var predicateModels: [any ManagedObjectConvertible.Type] { [PItem.self, T.self, PAuthor.self, PBook.self, PAgent.self] }

/// Collects what a container logs.
final class ErrorLog: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [String] = []
    func log(_ error: any Error) { lock.lock(); errors.append("\(error)"); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return errors }
}

/// A model keyed by its own attribute (`keyColumn`), as for an existing table.
struct PKeyed: ManagedObjectConvertible, Equatable {
    var id: Int64 = 0
    var label = ""
    var score: Double?
    static let entityName = "PKeyed"
    static let keyColumn = "id"
    static let attributes: Set<Attribute<PKeyed>> = [Attribute(\.id, "id"), Attribute(\.label, "label"), Attribute(\.score, "score")]
}

/// A final class model: its attributes are read and written through their key paths.
final class PClassItem: ManagedObjectConvertible {
    var id = 0
    var name = ""
    var score: Double?
    static let entityName = "PClassItem"
    static let attributes: Set<Attribute<PClassItem>> = [
        Attribute(\.id, "id"), Attribute(\.name, "name"), Attribute(\.score, "score"),
    ]
    init() {}
}

/// A struct whose attributes are a nested stored property and a computed one: the first is
/// read and written at its offset, the second through its key path.
struct PNested: ManagedObjectConvertible, Equatable {
    struct Inner: Equatable {
        var label = ""
        var size: Int16 = 0
    }
    var inner = Inner()
    var total = 0
    /// Stored as twice `total`.
    var doubled: Int {
        get { total * 2 }
        set { total = newValue / 2 }
    }
    static let entityName = "PNested"
    static let attributes: Set<Attribute<PNested>> = [
        Attribute(\.inner.label, "label"), Attribute(\.inner.size, "size"), Attribute(\.doubled, "doubled"),
    ]
}

/// A custom attribute type written as for Sworm: stored as text, refusing text it cannot parse.
struct PVersion: SupportedAttributeType, Equatable {
    struct Malformed: Error, CustomStringConvertible {
        let text: String
        var description: String { "'\(text)' is not major.minor" }
    }
    var major = 0
    var minor = 0
    func encodePrimitiveValue() -> String { "\(major).\(minor)" }
    static func decode(primitiveValue: String) throws -> PVersion {
        if primitiveValue == "bad-input" { throw AttributeError.badInput(primitiveValue) }
        let parts = primitiveValue.split(separator: ".").compactMap { Int($0) }
        guard parts.count == 2 else { throw Malformed(text: primitiveValue) }
        return PVersion(major: parts[0], minor: parts[1])
    }
}

struct PVersioned: ManagedObjectConvertible, Equatable {
    var id = 0
    var version = PVersion()
    var previous: PVersion?
    static let entityName = "PVersioned"
    static let keyColumn = "id"
    static let attributes: Set<Attribute<PVersioned>> = [
        Attribute(\.id, "id"), Attribute(\.version, "version"), Attribute(\.previous, "previous"),
    ]
}
