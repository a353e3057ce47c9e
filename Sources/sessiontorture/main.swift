import Foundation

// sessiontorture: the reliability driver. Children (write, read, subscribe) are spawned
// by the scenarios (crash, concurrency, fuzz-cli); tests run the scenarios at CI size,
// people run them with --long.
let arguments = Array(CommandLine.arguments.dropFirst())
exit(Torture.run(arguments))
