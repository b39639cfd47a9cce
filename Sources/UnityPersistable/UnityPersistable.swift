// The active-record flavor (Tailor's `Persistable`, `Query<T>`, `Validation`) on the Unity core.
// A user imports this module alone and gets the core's `Database`, values and errors too.
@_exported import Unity
