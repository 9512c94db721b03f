export const ACP_VERSION = '2026-04-17';
/** Oldest first, as the discovery document lists them; errors list them newest first. */
export const SUPPORTED_ACP_VERSIONS: readonly string[] = [ACP_VERSION];
