import Foundation

// Which coding a `ModelDef` uses: the generated one (`@RowCoded`, or a hand-written
// ``RowDecodable`` / ``RowEncodable`` conformance) when the type has it, `Codable` otherwise.
// The conformance is looked up once per statement for reading and once per model for writing;
// the generated code itself is then called directly, with no container and no dictionary.

extension ModelDef {
    /// Decodes the rows of one result set: the generated decoder when the type has one
    /// (columns resolved once per result set), the shared `RowDecoder` otherwise.
    @usableFromInline
    static func makeModelRowsDecoder() -> (Row) throws -> Self {
        if let generated = Self.self as? any RowDecodable.Type, let decode = generated.modelRowsDecoder(as: Self.self) {
            return decode
        }
        let decoder = modelRowDecoder.rowsDecoder(for: Self.self)
        return { try decoder.decode($0) }
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
        let pairs = try Self.modelRowEncoder.encode(self)
        return ModelColumns(names: pairs.map(\.column), values: pairs.map(\.value))
    }
}

extension RowDecodable {
    /// A rows decoder producing `M`, which must be `Self` (nil otherwise).
    static func modelRowsDecoder<M>(as model: M.Type) -> ((Row) throws -> M)? {
        guard M.self == Self.self else { return nil }
        // The columns are resolved at the first row and kept in a plain class, and the type's
        // initializer is called directly: this code runs unspecialized (the type was found at
        // run time), and a captured `RowReader<Self>` made every row look up that generic
        // type's metadata (8% of a fetch).
        let resolved = ResolvedRowColumns(decodingColumns)
        // `unsafeBitCast` is the identity here: M is Self, checked above.
        return { row in
            resolved.resolve(in: row.layout)
            return unsafeBitCast(try Self(row: row, columns: resolved.columns), to: M.self)
        }
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

/// The columns a decoder reads, resolved against the layout of the rows it is given: once per
/// result set. Used by one statement's loop at a time.
final class ResolvedRowColumns {
    private let names: [String]
    /// The columns resolved in the last layout seen. Unchecked: one loop uses it at a time,
    /// and the checked access cost a thread-local lookup per row.
    @exclusivity(unchecked) private(set) var columns = RowColumns.unresolved

    init(_ names: [String]) { self.names = names }

    /// Resolves the columns in `layout`, unless they already are.
    @inline(__always)
    func resolve(in layout: RowLayout) {
        if columns.layout !== layout { columns = RowColumns(names, in: layout) }
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
