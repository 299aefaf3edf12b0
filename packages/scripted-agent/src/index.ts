/**
 * The scripted agent of CONTRACT §7 as a library: the protocol messages, the directive parser
 * and the runner with injectable I/O (the process itself is `dist/main.js`).
 */
export * from "./Directive.js"
export * from "./Inbox.js"
export * from "./Protocol.js"
export * from "./Runner.js"
