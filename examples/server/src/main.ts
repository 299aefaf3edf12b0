/** The bundled server. */
export {}
