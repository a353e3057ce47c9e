import Dispatch
import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

// Before anything opens a file: a closed stdout must not be handed to the next file opened.
LineWriter.occupyClosedStandardDescriptors()
// A `watch --exec` command runs in sessionctl's own process group, the terminal's.
ChildGroup.keepChildrenInOwnGroup()
// The raw bytes of argv: Swift's CommandLine.arguments would silently repair invalid UTF-8.
let rawArguments = (1..<Int(CommandLine.argc)).map { index in
  CommandLine.unsafeArgv[index].map { Array(UnsafeBufferPointer(start: $0, count: strlen($0))) }
    .map { $0.map { UInt8(bitPattern: $0) } } ?? []
}
// Below this many open files the runtime itself cannot start its threads (it crashes
// reading /proc), and SQLite cannot open a store: say so before anything starts.
if let message = DescriptorLimit.refusal(minimum: 10, free: 7) {
  try? writeAll(STDERR_FILENO, Array("sessionctl: error: \(message)\n".utf8))
  exit(1)
}
let sessionctl = SessionCtl(environment: ProcessInfo.processInfo.environment, closesOutput: true)
// Every command but `watch` runs here, on the main thread alone: starting Swift concurrency's
// threads (or the signal thread) would cost a short command more than its work.
StopSignals.exitOnSignals()
if let status = sessionctl.runBlocking(rawArguments: rawArguments) { exit(status) }
StopSignals.shared.install()
Task { @MainActor in exit(await sessionctl.run(rawArguments: rawArguments)) }
dispatchMain()
