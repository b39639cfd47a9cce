// The UnityPredicates flavor sits on the Unity core; its issue fills this module.
@_exported import Unity
