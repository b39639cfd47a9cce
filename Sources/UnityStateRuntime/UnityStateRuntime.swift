// The state flavor's runtime: everything but the macro declarations, so that code which
// writes the conformances by hand (the benchmark) builds without swift-syntax. Users import
// `UnityState`, which re-exports this module and declares `@Model` and `@Command`.
@_exported import Unity
