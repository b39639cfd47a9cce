import BookmarksApp
import Foundation

let status = await BookmarksMain.run(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
exit(status)
