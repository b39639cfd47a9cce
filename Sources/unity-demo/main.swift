// The demo grows with each flavor; see README.md.
print("unity-demo: work in progress")
