import Foundation

let status = await SessionCtl(environment: ProcessInfo.processInfo.environment)
  .run(Array(CommandLine.arguments.dropFirst()))
exit(status)
