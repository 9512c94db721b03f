export {
  contentDigest,
  type HeaderLookup,
  type Jwk,
  type RequestParts,
  type ResponseParts,
  type SignatureFailure,
  signRequest,
  signResponse,
  verifyRequest,
} from './http.ts';
export {
  createKeyStore,
  type KeyStore,
  listSigningKeys,
  type PublicJwk,
  rotateSigningKey,
  type SigningKey,
  type SigningKeyRecord,
} from './keys.ts';
