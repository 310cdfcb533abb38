/** A credential for a Kubernetes API server: a bearer token, a client certificate, or both. */
export interface Credential {
  readonly token?: string;
  /** PEM. */
  readonly clientCertificateData?: string;
  /** PEM. */
  readonly clientKeyData?: string;
  /** When the issuer said the credential expires; absent: re-read after a while, or at a 401. */
  readonly expiresAt?: Date;
}

/**
 * How to reach one Kubernetes API server: where, which CA, and a credential
 * kept fresh. The hub's comes from a kubeconfig (`loadKubeConfig` of
 * @mco/kube-runtime), a member cluster's from @mco/cluster-access; a
 * `KubeClient` of @mco/kube-runtime makes requests with it. It is an
 * interface here, beside the plugin contract, so that plugins receive the
 * hub without depending on a Kubernetes client library.
 */
export interface KubeConnection {
  /** `https://host:port` (a path prefix is kept). */
  readonly server: string;
  /** Base64 PEM bundle, as in a kubeconfig; absent: the system's CAs. */
  readonly caData?: string;
  readonly tlsServerName?: string;
  /** An HTTP proxy (`http://[user:password@]host:port`) to tunnel through (kubeconfig `proxy-url`). */
  readonly proxyUrl?: string;
  readonly insecureSkipTlsVerify: boolean;
  /** The current credential; a connection without one answers `{}`. */
  getCredential(signal?: AbortSignal): Promise<Credential>;
  /** Forgets the cached credential (a 401 calls it). */
  invalidate(): void;
}
