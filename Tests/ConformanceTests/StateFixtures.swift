import Foundation
import UnityState

/// The state flavor's test models.
enum StateFixtures {
    struct Address: Codable, Equatable {
        var street: String
        var zip: Int
    }

    enum Mood: String, Codable {
        case calm, busy
    }

    @Model(id: 1)
    final class Person {
        @Property(id: 1) var name: String
        @Property(id: 2) var age: Int = 18
        @Property(id: 3) var nickname: String?
        @Property(id: 4) var address: Address?
        @Property(id: 5) var mood: Mood = .calm
        @Reference(id: 6) var partner: Person?
        @ReferenceList(id: 7) var friends: [Person]
        @Reference(id: 8) var pet: Pet!
        @ReferenceList(id: 9) var petSet: Set<Pet>
        @ReferenceList(id: 10) var petRow: ContiguousArray<Pet>

        /// Not stored: computed from stored properties.
        var greeting: String { "Hello, \(name)" }
        let constant = 42
    }

    @Model(id: 2)
    final class Pet: Hashable {
        @Property(id: 1) var name: String

        static func == (lhs: Pet, rhs: Pet) -> Bool { lhs.id == rhs.id }
        func hash(into hasher: inout Hasher) { hasher.combine(id) }
    }

    /// Every value type at its edges.
    @Model(id: 3)
    final class Values {
        @Property(id: 1) var int: Int
        @Property(id: 2) var int8: Int8
        @Property(id: 3) var int16: Int16
        @Property(id: 4) var int32: Int32
        @Property(id: 5) var int64: Int64
        @Property(id: 6) var uint: UInt
        @Property(id: 7) var uint8: UInt8
        @Property(id: 8) var uint16: UInt16
        @Property(id: 9) var uint32: UInt32
        @Property(id: 10) var uint64: UInt64
        @Property(id: 11) var double: Double
        @Property(id: 12) var float: Float
        @Property(id: 13) var bool: Bool
        @Property(id: 14) var string: String
        @Property(id: 15) var data: Data
        @Property(id: 16) var date: Date = Date(timeIntervalSince1970: 0)
        @Property(id: 17) var nested: Int??
        @Property(id: 18) var list: [String]
        @Property(id: 19) var dictionary: [String: Int]
        @Property(id: 20) var address: Address = Address(street: "", zip: 0)
    }

    /// A model with commands.
    @Model(id: 4)
    final class Package {
        @Property(id: 1) var name: String
        @Property(id: 2) var installed: String?
        @Property(id: 3) var log: [String]

        @Command(id: 1)
        func install(version: String) {
            installed = version
            log.append("install \(version)")
        }

        @Command(id: 2)
        func configure(_ key: String, value: Int, flags: [Bool]) throws {
            guard value >= 0 else { throw ConfigurationError.negative(value) }
            log.append("\(key)=\(value) \(flags)")
        }

        enum ConfigurationError: Error { case negative(Int) }
    }
}
