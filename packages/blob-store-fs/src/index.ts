/** @agent-runs/blob-store-fs: the BlobStore port on the local file system. */
export * as FileBlobStore from "./FileBlobStore.js"
