import Foundation

// Which coding a `ModelDef` uses: the generated one (`@RowCoded`, or a hand-written
// ``RowDecodable`` / ``RowEncodable`` conformance) when the type has it, `Codable` otherwise.
// The conformance is looked up once per statement for reading and once per model for writing;
// the generated code itself is then called directly, with no container and no dictionary.

extension ModelDef {
    /// Decodes the rows of one result set: the generated decoder when the type has one
    /// (columns resolved once per result set), the shared `RowDecoder` otherwise.
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
    func encodeModelColumns() throws -> [(column: String, value: DatabaseValue)] {
        if let generated = Self.self as? any RowEncodable.Type, let pairs = try generated.encodeModel(self) {
            return pairs
        }
        return try Self.modelRowEncoder.encode(self)
    }
}

extension RowDecodable {
    /// A rows decoder producing `M`, which must be `Self` (nil otherwise).
    static func modelRowsDecoder<M>(as model: M.Type) -> ((Row) throws -> M)? {
        guard M.self == Self.self else { return nil }
        var reader = RowReader<Self>()
        // `unsafeBitCast` is the identity here: M is Self, checked above.
        return { row in unsafeBitCast(try reader.decode(row), to: M.self) }
    }

    /// One row as `M`, which must be `Self` (nil otherwise).
    static func decodeModel<M>(_ row: Row, as model: M.Type) throws -> M? {
        guard M.self == Self.self else { return nil }
        return unsafeBitCast(try row.decode(as: Self.self), to: M.self)
    }
}

extension RowEncodable {
    /// The column/value pairs of `model`, which must be a `Self` (nil otherwise).
    static func encodeModel<M>(_ model: M) throws -> [(column: String, value: DatabaseValue)]? {
        guard M.self == Self.self else { return nil }
        // The identity: M is Self, checked above.
        let values = try unsafeBitCast(model, to: Self.self).encodedRowValues()
        let columns = encodingColumns
        var pairs: [(column: String, value: DatabaseValue)] = []
        pairs.reserveCapacity(columns.count)
        for i in columns.indices { pairs.append((columns[i], values[i])) }
        return pairs
    }
}
