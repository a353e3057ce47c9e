import CommandLineKit

extension Torture {
  /// `write --count`: how many writes (0: until killed).
  static let writes = Option<Int>(
    "count", placeholder: "n", help: "How many writes (default 0: until killed).")
  /// `write --origin`.
  static let origin = Option<String>("origin", placeholder: "name", help: "The origin (default torture).")
  /// `write --instances`.
  static let instances = Option<Int>(
    "instances", placeholder: "k", help: "How many instances to write through in turn (default 1).")
  /// `write --normal-durability`.
  static let normalDurability = Flag(
    "normal-durability", help: "Open with durability normal (synchronous=NORMAL) instead of full.")
  /// `write --keep-going`.
  static let keepGoing = Flag(
    "keep-going", help: "Print \"failed NAME: MESSAGE\" for a write that fails and go on (default: exit).")
  /// `read --count`.
  static let reads = Option<Int>("count", placeholder: "n", help: "How many reads (default 1000).")
  /// `subscribe --count`.
  static let changes = Option<Int>(
    "count", placeholder: "n", help: "How many changes to print (default 1; 0: until stopped).")

  /// The processes the scenarios spawn (``Children``).
  static let children = [
    TortureCommand(
      CommandSpec(
        "write", abstract: "A child: login, rename and logout in turn; print each acknowledged cursor.",
        options: [writes, origin, instances, normalDurability, keepGoing])
    ) { arguments in
      try Children.write(
        path: arguments.required(db), count: arguments[writes] ?? 0, origin: arguments[origin] ?? "torture",
        instances: arguments[instances] ?? 1, durability: arguments[normalDurability] ? .normal : .full,
        keepGoing: arguments[keepGoing])
    },
    TortureCommand(CommandSpec("read", abstract: "A child: read the state <n> times.", options: [reads])) {
      try Children.read(path: $0.required(db), count: $0[reads] ?? 1000)
    },
    TortureCommand(
      CommandSpec(
        "subscribe",
        abstract:
          "A child: print \"cursor origin\" for each of the next <n> changes (--db may be a postgresql:// URL).",
        options: [changes])
    ) { try Children.subscribe(path: $0.required(db), count: $0[changes] ?? 1) },
  ]
}
