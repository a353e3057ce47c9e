// `import SessionStorage` alone gives an app everything it needs: cursors, feed starts and
// feed errors come from FeedKit.
@_exported import FeedKit
