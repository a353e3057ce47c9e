import Foundation

exit(SessionBench.main(Array(CommandLine.arguments.dropFirst())))
