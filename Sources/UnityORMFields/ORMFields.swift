@_exported import UnityORM

/// Generates an `AmigoModel` subclass's `AmigoModel.ormFields` accessor table from
/// its stored `var` properties, each by its name, as Amigo found them through KVC:
///
/// ```swift
/// import UnityORMFields
///
/// @ORMFields
/// final class Dog: AmigoModel {
///     var id = 0
///     var label = "New Dog"
/// }
/// ```
///
/// Each entry writes its property with a direct store, which reads rows into models several
/// times faster than writes through key paths (the hand-written `.property("id", \.id)`).
/// Constants (`let`), computed, `lazy` and `static` properties are left out; a property whose
/// type is neither a database value nor a model is listed as one the ORM cannot store, and a
/// `Column` naming it is a mapping error. The table can be written by hand instead:
/// `.property("id", \.id) { $0.id = $1 }` is what the macro writes for `id`.
///
/// It lives in its own module so that `import UnityORM` alone never builds swift-syntax.
@attached(member, names: named(ormFields))
public macro ORMFields() = #externalMacro(module: "UnityMacros", type: "ORMFieldsMacro")
