@_exported import Unity
