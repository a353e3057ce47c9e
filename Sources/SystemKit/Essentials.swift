#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// A thread of our own, without Foundation's `Thread` (so that a program needs no more
/// than FoundationEssentials): a detached POSIX thread with the default stack size, as
/// `Thread.start()` and `Thread.detachNewThread(_:)` start on Linux.
package enum DetachedThread {
  /// Starts a detached thread that runs `body`, called `name` when one is given (set on the
  /// new thread before `body` runs, so that `top -H` and `/proc/PID/task/*/comm` show it).
  /// Returns false, running nothing, when no thread could be made (`pthread_create` failed:
  /// a thread limit, or no memory for its stack).
  @discardableResult
  package static func start(name: String? = nil, _ body: @escaping @Sendable () -> Void) -> Bool {
    let context = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    #if canImport(Darwin)
      var thread: pthread_t?
    #else
      var thread = pthread_t()
    #endif
    let created = pthread_create(
      &thread, &attributes,
      { raw in
        let pointer: UnsafeMutableRawPointer? = raw
        guard let pointer else { return nil }
        let start = Unmanaged<Start>.fromOpaque(pointer).takeRetainedValue()
        if let name = start.name { DetachedThread.setName(name) }
        start.body()
        return nil
      }, context)
    if created != 0 { Unmanaged<Start>.fromOpaque(context).release() }
    return created == 0
  }

  /// Names the calling thread as `pthread_setname_np` does, which Swift's Glibc module does
  /// not offer: a name of at most 15 bytes is written to the thread's `comm`, a longer one is
  /// refused (ERANGE) and the thread keeps its name.
  private static func setName(_ name: String) {
    #if canImport(Darwin)
      _ = pthread_setname_np(name)
    #else
      guard name.utf8.count <= 15 else { return }
      let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
      guard descriptor >= 0 else { return }
      _ = name.utf8CString.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count - 1) }
      close(descriptor)
    #endif
  }

  /// Blocks the calling thread for `seconds`, as `Thread.sleep(forTimeInterval:)` does
  /// (a signal that interrupts the sleep does not shorten it).
  package static func sleep(seconds: Int) {
    var remaining = timespec(tv_sec: seconds, tv_nsec: 0)
    var request = remaining
    while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
  }

  /// What the new thread runs, handed to it retained.
  private final class Start {
    let name: String?
    let body: @Sendable () -> Void

    init(name: String?, body: @escaping @Sendable () -> Void) {
      self.name = name
      self.body = body
    }
  }
}

extension StringProtocol {
  /// The text without the leading and trailing whitespace that Foundation's
  /// `trimmingCharacters(in: .whitespaces)` removes or, with `newlines`, that
  /// `.whitespacesAndNewlines` removes: exactly the code points Foundation's sets hold (tab,
  /// the category Zs and U+200B; and U+000A–U+000D, U+0085, U+2028, U+2029), compared one
  /// code point at a time as Foundation compares them. FoundationEssentials has no
  /// `trimmingCharacters(in:)`.
  package func trimmingWhitespace(newlines: Bool = false) -> String {
    func trimmed(_ scalar: Unicode.Scalar) -> Bool {
      switch scalar.value {
      case 0x09, 0x20, 0xA0, 0x1680, 0x2000...0x200B, 0x202F, 0x205F, 0x3000: return true
      case 0x0A...0x0D, 0x85, 0x2028, 0x2029: return newlines
      default: return false
      }
    }
    let scalars = unicodeScalars
    guard let first = scalars.firstIndex(where: { !trimmed($0) }),
      let last = scalars.lastIndex(where: { !trimmed($0) })
    else { return "" }
    var kept = String.UnicodeScalarView()
    kept.append(contentsOf: scalars[first...last])
    return String(kept)
  }
}

#if canImport(FoundationEssentials)
  extension String {
    /// Every occurrence of `target` replaced with `replacement`, as Foundation's
    /// `replacingOccurrences(of:with:)` replaces them, which FoundationEssentials lacks:
    /// character by character (a quote followed by a combining mark is no quote, `é` matches
    /// `e` + U+0301), as `replacing(_:with:)` does; an empty `target` changes nothing.
    package func replacingOccurrences(of target: String, with replacement: String) -> String {
      target.isEmpty ? self : replacing(target, with: replacement)
    }
  }
#endif

/// `close(2)`, for a type whose own `close()` hides the C function (Foundation re-exported
/// it as `Foundation.close`; FoundationEssentials does not).
@discardableResult
package func closeDescriptor(_ descriptor: Int32) -> Int32 { close(descriptor) }

/// `write(2)`, for a type whose own `write(_:)` hides the C function.
package func writeDescriptor(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
  write(descriptor, buffer, count)
}

extension StringProtocol {
  /// The first range of `target` in the text as Foundation's `range(of:)` finds it (which
  /// FoundationEssentials lacks) for a `target` of ASCII: code point by code point, where a
  /// match may begin inside a character (the `\n` of `\r\n`) but not end before a code point
  /// that extends the character (Grapheme_Cluster_Break=Extend: a combining mark, a skin
  /// tone). Foundation also compares canonically equivalent text alike, which changes nothing
  /// for an ASCII target. Nil when there is none or `target` is empty.
  package func rangeAsFoundationFinds(_ target: String) -> Range<String.Index>? {
    let pattern = Array(target.unicodeScalars)
    guard !pattern.isEmpty else { return nil }
    let scalars = unicodeScalars
    var start = scalars.startIndex
    while start != scalars.endIndex {
      var index = start
      var matched = true
      for scalar in pattern {
        guard index != scalars.endIndex, scalars[index] == scalar else {
          matched = false
          break
        }
        index = scalars.index(after: index)
      }
      if matched,
        index == scalars.endIndex
          || !(scalars[index].properties.isGraphemeExtend || scalars[index].properties.isEmojiModifier)
      {
        return start..<index
      }
      start = scalars.index(after: start)
    }
    return nil
  }

  /// The text with each `%XX` replaced by its byte, as Foundation's `removingPercentEncoding`
  /// decodes it: nil when a `%` is not followed by two hexadecimal digits or the bytes are
  /// not UTF-8.
  package var percentDecoded: String? {
    Self.percentDecoded(Array(utf8)).flatMap { String(validating: $0, as: UTF8.self) }
  }

  /// `encoded` with each `%XX` replaced by its byte; nil when a `%` is not followed by two
  /// hexadecimal digits.
  package static func percentDecoded(_ encoded: [UInt8]) -> [UInt8]? {
    func digit(_ byte: UInt8) -> UInt8? {
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
      case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
      case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
      default: return nil
      }
    }
    var bytes: [UInt8] = []
    var index = 0
    while index < encoded.count {
      guard encoded[index] == UInt8(ascii: "%") else {
        bytes.append(encoded[index])
        index += 1
        continue
      }
      guard index + 2 < encoded.count, let high = digit(encoded[index + 1]),
        let low = digit(encoded[index + 2])
      else { return nil }
      bytes.append(high << 4 | low)
      index += 3
    }
    return bytes
  }
}
