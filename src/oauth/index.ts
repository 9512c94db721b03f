export { type OAuthClient, resolveClient } from './clients.ts';
export {
  ACCESS_TOKEN_TTL_MS,
  issuerOf,
  mcpResourceOf,
  type OAuthDeps,
  READ_SCOPE,
  REFRESH_TOKEN_TTL_MS,
  WRITE_SCOPE,
} from './context.ts';
export {
  type Access,
  type AccessTokenError,
  type AuthorizationParams,
  type AuthorizationRefusal,
  type AuthorizationRequest,
  authorizationResponseUrl,
  type ConnectedClient,
  checkAuthorizationRequest,
  grantConsent,
  listConnectedClients,
  type OAuthPrincipal,
  revokeConnectedClient,
  sweepOAuthData,
  verifyAccessToken,
} from './grants.ts';
export {
  AUTHORIZE_PATH,
  authorizationServerMetadata,
  oauthRoutes,
  protectedResourceMetadata,
  protectedResourceMetadataUrl,
} from './routes.ts';
export { oauthWiring } from './wiring.ts';
