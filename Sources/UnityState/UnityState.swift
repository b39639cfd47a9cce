// The state-path flavor (StateModel's API): `import UnityState` gives the runtime
// (`UnityStateRuntime`: databases, property wrappers, contexts, sync) and the `@Model` /
// `@Command` macros, which are declared in this module because they need swift-syntax.
@_exported import UnityStateRuntime
