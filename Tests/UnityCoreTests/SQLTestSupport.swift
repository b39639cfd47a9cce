import Testing
@testable import Unity

/// Renders through all three paths (uncached, cached miss-or-hit, cached hit) and checks
/// they agree, so every rendering test also checks the shape cache.
func rendered(_ statement: SQLStatement, _ dialect: SQLDialect) throws -> RenderedSQL {
    let uncached = try dialect.renderUncached(statement)
    let first = try dialect.render(statement)
    let second = try dialect.render(statement)
    #expect(first == uncached)
    #expect(second == uncached)
    return uncached
}

/// The SQL text only.
func sqlText(_ statement: SQLStatement, _ dialect: SQLDialect) throws -> String {
    try rendered(statement, dialect).sql
}

/// Renders a WHERE-only SELECT from "t" to test an expression.
func whereSQL(_ condition: SQLExpression, _ dialect: SQLDialect) throws -> RenderedSQL {
    try rendered(.select(SQLSelect(from: "t").where(condition)), dialect)
}

/// Expects a misuse error whose message contains `fragment`.
func expectMisuse(_ fragment: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected a misuse error containing \"\(fragment)\"", sourceLocation: sourceLocation)
    } catch let DatabaseError.misuse(message) {
        #expect(message.contains(fragment), "message was: \(message)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected misuse, got \(error)", sourceLocation: sourceLocation)
    }
}
