import Foundation
#if canImport(Observation)
import Observation
#endif

/// The observation support `@Model` gives every model: Swift's Observation registrar, so that
/// `withObservationTracking` (and SwiftUI on Apple platforms) learns which properties a view
/// or a task read and is told when they change — through the model, or through an
/// ``ObservableDatabase`` when the change arrives another way (sync, a context's commit).
///
/// Observation needs macOS 14 / iOS 17; on older Apple systems this does nothing, so the
/// package keeps its lower deployment target. On Linux it always works.
public final class ModelObservation: @unchecked Sendable {
    // @unchecked: ObservationRegistrar is Sendable; the box is immutable.
    #if canImport(Observation) && !canImport(Darwin)
    private let registrar = ObservationRegistrar()
    #else
    private let box: Any?
    #endif

    /// A registrar for one model object.
    public init() {
        #if canImport(Observation) && canImport(Darwin)
        if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) { box = ObservationRegistrar() } else { box = nil }
        #elseif !canImport(Observation)
        box = nil
        #endif
    }

    #if canImport(Observation)
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    private var current: ObservationRegistrar? {
        #if canImport(Darwin)
        return box as? ObservationRegistrar
        #else
        return registrar
        #endif
    }

    /// Records that `keyPath` of `model` was read.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public func access<Model: Observable, Member>(_ model: Model, keyPath: KeyPath<Model, Member>) {
        current?.access(model, keyPath: keyPath)
    }

    /// Runs `write` as a change of `keyPath` of `model`, telling its observers.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public func withMutation<Model: Observable, Member>(of model: Model, keyPath: KeyPath<Model, Member>, _ write: () -> Void) {
        if let registrar = current {
            registrar.withMutation(of: model, keyPath: keyPath, write)
        } else {
            write()
        }
    }
    #endif
}
