import SessionStorage

/// `deliver-local`, `deliver-remote`, `deliver-external` and `fanout`: one write at a
/// time, timed from just before the write call until every subscriber has the entry.
/// Writes use `synchronous=NORMAL`, so that the figures show delivery, not `fsync`.
enum DeliverScenario {
  /// One side of a delivery scenario: where its subscribers report, and how it writes.
  struct Side {
    let arrivals = Arrivals()
    var head: Int64 = 0
    var subscribers = 0
    var write: (Int) throws -> Int64? = { _ in nil }
  }

  /// `deliver-local`: a subscriber in this process. Baseline: a thread with its own
  /// connection, woken by a semaphore after the raw commit, reading the new rows.
  static func local(scale: Scale) throws -> Outcome {
    let workspace = try Workspace("deliver-local")
    try workspace.createRawSchema()
    let store = try SessionStore(
      path: workspace.ours, options: .init(durability: .normal, origin: "sessionbench"))
    let subscribers = InProcessSubscribers()
    defer { subscribers.stop() }
    var ours = Side()
    var raw = Side()
    try subscribers.subscribe(1, to: store, arrivals: ours.arrivals)
    ours.subscribers = 1
    ours.head = try store.bounds().head.value
    ours.write = storeWrites(store)
    let rawWriter = try RawWriter(db: RawDB(path: workspace.raw, synchronous: "NORMAL"))
    raw.head = try rawWriter.db.head()
    subscribers.startRaw(1, path: workspace.raw, head: raw.head, arrivals: raw.arrivals)
    raw.subscribers = 1
    raw.write = { index in
      try rawWriter.write(login: index.isMultiple(of: 2))
      subscribers.wakeRaw()
      return nil
    }
    let (oursSample, rawSample) = try alternate(&ours, &raw, count: scale.deliveries, rounds: scale.rounds)
    return Outcome(
      measurements: Measurement.latency("deliver-local", ours: oursSample, baseline: rawSample),
      verdicts: [.latency("deliver-local", ours: oursSample, raw: rawSample, p50: 1.2, p99: 1.5)])
  }

  /// `deliver-remote` (the store writes) and `deliver-external` (a raw connection writes
  /// what a sqlite3 shell user would, on both sides): a subscriber in another process.
  /// Baseline: the raw inotify + `data_version` watcher process (``RawWatcher``).
  static func remote(external: Bool, scale: Scale) throws -> Outcome {
    let name = external ? "deliver-external" : "deliver-remote"
    let workspace = try Workspace(name)
    try workspace.createRawSchema()
    let store = try SessionStore(
      path: workspace.ours, options: .init(durability: .normal, origin: "sessionbench"))
    var ours = Side()
    var raw = Side()
    let oursChild = try BenchChild(["child-subscriber", "--db", workspace.ours], arrivals: ours.arrivals)
    defer { oursChild.finish() }
    let rawChild = try BenchChild(["child-raw-watcher", "--db", workspace.raw], arrivals: raw.arrivals)
    defer { rawChild.finish() }
    try oursChild.waitUntilReady()
    try rawChild.waitUntilReady()
    ours.subscribers = 1
    raw.subscribers = 1
    ours.head = try store.bounds().head.value
    if external {
      ours.write = try rawWrites(
        RawWriter(db: RawDB(path: workspace.ours, synchronous: "NORMAL"), external: true))
    } else {
      ours.write = storeWrites(store)
    }
    let rawWriter = try RawWriter(db: RawDB(path: workspace.raw, synchronous: "NORMAL"), external: external)
    raw.head = try rawWriter.db.head()
    raw.write = rawWrites(rawWriter)
    let (oursSample, rawSample) = try alternate(&ours, &raw, count: scale.deliveries, rounds: scale.rounds)
    return Outcome(
      measurements: Measurement.latency(name, ours: oursSample, baseline: rawSample),
      verdicts: [.latency(name, ours: oursSample, raw: rawSample, p50: 1.3, p99: 2)])
  }

  /// `fanout`: one writer, 16 subscribers in this process and 8 in other processes; the
  /// latency is the time until the last of the 24 has the entry.
  static func fanout(scale: Scale, local: Int = 16, remote: Int = 8) throws -> Outcome {
    let workspace = try Workspace("fanout")
    try workspace.createRawSchema()
    let store = try SessionStore(
      path: workspace.ours, options: .init(durability: .normal, origin: "sessionbench"))
    var ours = Side()
    var raw = Side()
    var children: [BenchChild] = []
    defer { for child in children { child.finish() } }
    for _ in 0..<remote {
      children.append(
        try BenchChild(["child-subscriber", "--db", workspace.ours], arrivals: ours.arrivals))
      children.append(try BenchChild(["child-raw-watcher", "--db", workspace.raw], arrivals: raw.arrivals))
    }
    for child in children { try child.waitUntilReady() }
    let subscribers = InProcessSubscribers()
    defer { subscribers.stop() }
    try subscribers.subscribe(local, to: store, arrivals: ours.arrivals)
    ours.subscribers = local + remote
    ours.head = try store.bounds().head.value
    ours.write = storeWrites(store)
    let rawWriter = try RawWriter(db: RawDB(path: workspace.raw, synchronous: "NORMAL"))
    raw.head = try rawWriter.db.head()
    subscribers.startRaw(local, path: workspace.raw, head: raw.head, arrivals: raw.arrivals)
    raw.subscribers = local + remote
    raw.write = { index in
      try rawWriter.write(login: index.isMultiple(of: 2))
      subscribers.wakeRaw()
      return nil
    }
    let (oursSample, rawSample) = try alternate(&ours, &raw, count: scale.fanoutWrites, rounds: scale.rounds)
    return Outcome(
      measurements: Measurement.latency("fanout", ours: oursSample, baseline: rawSample),
      verdicts: [.latency("fanout", ours: oursSample, raw: rawSample, p50: 1.5)])
  }

  /// Login/logout alternating through the store; returns the cursor it reported.
  private static func storeWrites(_ store: SessionStore) -> (Int) throws -> Int64? {
    { index in
      let entry =
        index.isMultiple(of: 2) ? try store.blocking.logIn(as: "alice") : try store.blocking.logOut()
      guard let entry else { throw BenchError("write \(index) through the store changed nothing") }
      return entry.cursor.value
    }
  }

  /// Login/logout alternating through raw SQLite.
  private static func rawWrites(_ writer: RawWriter) -> (Int) throws -> Int64? {
    { index in
      guard try writer.write(login: index.isMultiple(of: 2)) else {
        throw BenchError("raw write \(index) changed nothing")
      }
      return nil
    }
  }

  /// Warms both sides up, then runs `count` writes per side in `rounds` alternating blocks.
  static func alternate(_ ours: inout Side, _ raw: inout Side, count: Int, rounds: Int) throws -> (
    Sample, Sample
  ) {
    var (oursSample, rawSample) = (Sample(), Sample())
    var (oursIndex, rawIndex) = (0, 0)
    // The first writes also wait for watcher threads that are still starting.
    _ = try run(&ours, count: 20, index: &oursIndex)
    _ = try run(&raw, count: 20, index: &rawIndex)
    let perRound = max(1, count / rounds)
    for round in 0..<rounds {
      if round.isMultiple(of: 2) {
        oursSample.merge(try run(&ours, count: perRound, index: &oursIndex))
        rawSample.merge(try run(&raw, count: perRound, index: &rawIndex))
      } else {
        rawSample.merge(try run(&raw, count: perRound, index: &rawIndex))
        oursSample.merge(try run(&ours, count: perRound, index: &oursIndex))
      }
    }
    return (oursSample, rawSample)
  }

  /// `count` timed writes of one side, numbered on from `index`.
  private static func run(_ side: inout Side, count: Int, index: inout Int) throws -> Sample {
    let (write, start) = (side.write, index)
    index += count
    return try Paired.pingPong(
      count: count, arrivals: side.arrivals, subscribers: side.subscribers, head: &side.head
    ) {
      try write(start + $0)
    }
  }
}
