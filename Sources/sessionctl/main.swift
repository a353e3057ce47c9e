import Foundation

// The raw bytes of argv: Swift's CommandLine.arguments would silently repair invalid UTF-8.
let rawArguments = (1..<Int(CommandLine.argc)).map { index in
  CommandLine.unsafeArgv[index].map { Array(UnsafeBufferPointer(start: $0, count: strlen($0))) }
    .map { $0.map { UInt8(bitPattern: $0) } } ?? []
}
let status = await SessionCtl(environment: ProcessInfo.processInfo.environment).run(
  rawArguments: rawArguments)
exit(status)
