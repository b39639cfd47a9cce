@testable import DriverPostgres
import Foundation
import Testing

/// The driver's parts of replicas and failover that need no cluster: log positions, the
/// recovery-conflict error, the multi-host URL, and the replica drivers.
@Suite("PostgreSQL replication (unit)")
struct PostgresReplicationUnitTests {
    @Test func logPositionsParseAndCompareAsNumbers() {
        #expect(PostgresConnection.parseLogPosition("0/3000000") == 0x300_0000)
        #expect(PostgresConnection.parseLogPosition("16/B374D848") == 0x16_B374_D848)
        #expect(PostgresConnection.parseLogPosition("FFFFFFFF/FFFFFFFF") == UInt64.max)
        // The high part outranks any low part: 1/0 is after 0/FFFFFFFF.
        let a = PostgresConnection.parseLogPosition("0/FFFFFFFF")!
        let b = PostgresConnection.parseLogPosition("1/0")!
        #expect(a < b)
        for bad in ["", "0", "0/", "/1", "G/1", "1/2/3", "100000000/0"] {
            #expect(PostgresConnection.parseLogPosition(bad) == nil, "\(bad)")
        }
    }

    @Test func aStandbysRecoveryConflictIsItsOwnRetryableError() {
        let conflict = DatabaseErrorContext(message: "canceling statement due to conflict with recovery", code: "40001",
                                            detail: "User query might have needed to see row versions that must be removed.")
        let mapped = PGErrorMapping.error(sqlState: "40001", context: conflict, connectionBad: false)
        #expect(mapped == .recoveryConflict(conflict))
        #expect(mapped.isRetryable)
        let bufferDeadlock = DatabaseErrorContext(message: "canceling statement due to conflict with recovery", code: "40P01")
        #expect(PGErrorMapping.error(sqlState: "40P01", context: bufferDeadlock, connectionBad: false) == .recoveryConflict(bufferDeadlock))
        // A serialization failure on a primary stays busy.
        let serialization = DatabaseErrorContext(message: "could not serialize access due to concurrent update", code: "40001")
        #expect(PGErrorMapping.error(sqlState: "40001", context: serialization, connectionBad: false) == .busy(serialization))
        // A standby that terminates the whole connection: the connection is lost.
        let fatal = DatabaseErrorContext(message: "terminating connection due to conflict with recovery", code: "40001")
        #expect(PGErrorMapping.error(sqlState: "40001", context: fatal, connectionBad: true) == .connectionLost(fatal))
    }

    @Test func aMultiHostURLKeepsItsHostsAndTargetWhenThePoolerParameterIsTaken() {
        let url = "postgresql://app@db1:5432,db2:5433/app?target_session_attrs=read-write&pooler=transaction&connect_timeout=2"
        let (stripped, pooler) = PostgresDriver.takePoolerParameter(from: url)
        #expect(stripped == "postgresql://app@db1:5432,db2:5433/app?target_session_attrs=read-write&connect_timeout=2")
        #expect(pooler == "transaction")
        let plain = "postgresql://app@db1:5432,db2:5433/app?target_session_attrs=read-write"
        #expect(PostgresDriver.takePoolerParameter(from: plain).0 == plain)
        let driver = PostgresDriver(url)
        #expect(driver.poolerMode == .transaction)
        #expect(driver.libpqConnectionString == stripped)
    }

    @Test func aPrimaryWithReplicasHandsEachReplicaItsSettings() throws {
        let driver = PostgresDriver(primary: "postgresql://app@primary/app", replicas: ["postgresql://app@r1/app", "postgresql://app@r2/app?pooler=transaction"],
                                    connections: 3, searchPath: "s")
        #expect(driver.connectionString == "postgresql://app@primary/app")
        let replicas = driver.replicas.compactMap { $0 as? PostgresDriver }
        #expect(replicas.map(\.connectionString) == ["postgresql://app@r1/app", "postgresql://app@r2/app?pooler=transaction"])
        #expect(replicas.map(\.connections) == [3, 3])
        #expect(replicas.map(\.searchPath) == ["s", "s"])
        #expect(replicas.map(\.poolerMode) == [PoolerMode.none, .transaction])
        #expect(replicas.allSatisfy { $0.replicas.isEmpty })
        #expect(PostgresDriver("postgresql://app@primary/app").replicas.isEmpty)
    }
}
