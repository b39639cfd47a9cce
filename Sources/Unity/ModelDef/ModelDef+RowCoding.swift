import Foundation

// Which coding a `ModelDef` uses: the generated one (`@RowCoded`, or a hand-written
// ``RowDecodable`` / ``RowEncodable`` conformance) when the type has it, `Codable` otherwise.
// The conformance is looked up once per statement for reading and once per model for writing;
// the generated code itself is then called directly, with no container and no dictionary.

extension ModelDef {
    /// Every row of `statement` on `conn`, decoded: by the generated code when the type has it
    /// (its loop is compiled for the type, columns resolved once per result set), by the shared
    /// `RowDecoder` otherwise.
    static func decodeModelRows(_ statement: SQLStatement, on conn: Connection) throws -> [Self] {
        if let generated = Self.self as? any RowDecodable.Type,
           let models = try generated.modelRows(as: Self.self, { body in try conn.forEachRow(statement, body) }) {
            return models
        }
        // Collected outside `Array`: this loop is not specialized for the model, and each
        // `Array<Self>.append` here asked the runtime for the array type's metadata.
        let models = UnspecializedCollector<Self>()
        let decoder = modelRowDecoder.rowsDecoder(for: Self.self)
        try conn.forEachRow(statement) { row in models.append(try decoder.decode(row)) }
        return models.takeArray()
    }

    /// Decodes one row read from the table (generated coding when present).
    static func decodeModelRow(_ row: Row) throws -> Self {
        if let generated = Self.self as? any RowDecodable.Type, let model = try generated.decodeModel(row, as: Self.self) {
            return model
        }
        return try modelRowDecoder.decode(Self.self, from: row)
    }

    /// This model's columns and values (generated coding when present).
    func encodeModelColumns() throws -> ModelColumns {
        if let generated = Self.self as? any RowEncodable.Type, let columns = try generated.encodeModel(self) {
            return columns
        }
        let expected = encodedColumnNames.names(of: Self.self)
        let columns = try Self.modelRowEncoder.encodeColumns(self, expecting: expected)
        if columns.asExpected { return ModelColumns(names: columns.names, values: columns.values) }
        encodedColumnNames.remember(columns.names, of: Self.self)
        return ModelColumns(names: columns.names, values: columns.values)
    }
}

/// The column names each `Codable` model type encoded last. The next model of the type is
/// encoded against them: while its columns come in the same order, no list of names is built
/// (nor searched for a column written twice), and the models share one array, so a batch of a
/// million statements holds one list of names instead of a million and its inserts are seen
/// to have one shape by comparing two pointers.
let encodedColumnNames = EncodedColumnNames()

/// A lock-protected map from a model type to the column names it last encoded.
final class EncodedColumnNames: @unchecked Sendable {
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var namesByType: [ObjectIdentifier: [String]] = [:]

    /// The names `type` encoded last, if it has been encoded.
    func names(of type: Any.Type) -> [String]? {
        lock.lock()
        defer { lock.unlock() }
        return namesByType[ObjectIdentifier(type)]
    }

    /// Records the names a model of `type` encoded.
    func remember(_ names: [String], of type: Any.Type) {
        lock.lock()
        defer { lock.unlock() }
        namesByType[ObjectIdentifier(type)] = names
    }
}

extension RowDecodable {
    /// Every row `forEachRow` passes, as `M`, which must be `Self` (nil otherwise), decoded by
    /// the type's own ``RowDecodable/decodeRows(_:)``.
    static func modelRows<M>(as model: M.Type, _ forEachRow: (_ body: (Row) throws -> Void) throws -> Void) throws -> [M]? {
        guard M.self == Self.self else { return nil }
        // The identity: M is Self, checked above.
        return unsafeBitCast(try decodeRows(forEachRow), to: [M].self)
    }

    /// One row as `M`, which must be `Self` (nil otherwise).
    static func decodeModel<M>(_ row: Row, as model: M.Type) throws -> M? {
        guard M.self == Self.self else { return nil }
        return unsafeBitCast(try row.decode(as: Self.self), to: M.self)
    }
}

extension RowEncodable {
    /// The columns and values of `model`, which must be a `Self` (nil otherwise): the
    /// type's own column list (shared, not copied) and the values its generated code wrote.
    static func encodeModel<M>(_ model: M) throws -> ModelColumns? {
        guard M.self == Self.self else { return nil }
        // The identity: M is Self, checked above.
        let values = try unsafeBitCast(model, to: Self.self).encodedRowValues()
        return ModelColumns(names: encodingColumns, values: values)
    }
}

/// A model's columns and their values, in the same order: two arrays rather than an array of
/// pairs, so that a generated type's column list is shared by all its models and the values
/// go to a statement as they are (a save made three arrays and copied every name before).
struct ModelColumns {
    /// The column names.
    let names: [String]
    /// The values, one per name.
    let values: [DatabaseValue]

    var isEmpty: Bool { names.isEmpty }

    /// The value of `column`, or nil when the model has no such column.
    func value(of column: String) -> DatabaseValue? {
        guard let i = names.firstIndex(of: column), i < values.count else { return nil }
        return values[i]
    }

    /// Whether `column` is one of the names.
    func contains(_ column: String) -> Bool { names.contains(column) }
}

/// Collects values of a type the code is not specialized for, then hands them over as one
/// array. `Array<T>.append` in unspecialized generic code looks up `Array<T>`'s metadata in
/// the runtime on every call; this collector reaches `T` through its own instance (one lookup
/// when it is made) and builds the array once, at the end.
final class UnspecializedCollector<T> {
    private var base: UnsafeMutablePointer<T>
    private var count = 0
    private var capacity: Int

    init(capacity: Int = 64) {
        self.capacity = max(1, capacity)
        base = UnsafeMutablePointer<T>.allocate(capacity: self.capacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    /// Adds `value` at the end.
    func append(_ value: consuming T) {
        if count == capacity {
            let grown = UnsafeMutablePointer<T>.allocate(capacity: capacity * 2)
            grown.moveInitialize(from: base, count: count)
            base.deallocate()
            base = grown
            capacity *= 2
        }
        (base + count).initialize(to: value)
        count += 1
    }

    /// The values collected, in order; the collector is empty afterwards.
    func takeArray() -> [T] {
        let taken = count
        count = 0
        return Array(unsafeUninitializedCapacity: taken) { buffer, initialized in
            if let destination = buffer.baseAddress { destination.moveInitialize(from: base, count: taken) }
            initialized = taken
        }
    }
}
