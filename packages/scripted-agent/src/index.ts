/**
 * The scripted agent (docs/reference/harness-protocol.md) as a library: the protocol messages, the directive parser
 * and the runner with injectable I/O (the process itself is `dist/main.js`).
 */
export * from "./Directive.js"
export * from "./Inbox.js"
export * from "./Protocol.js"
export * from "./Runner.js"
