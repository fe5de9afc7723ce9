/**
 * Who may call the core's HTTP APIs (core/README.md, "Authentication").
 * - {@link principalAuth}: operator token (every organization) or edge token (its own), as `c.var.principal`.
 * - {@link tokenListAuth}, {@link hasListedToken}: a fixed token list (`METRICS_TOKENS`, `OPS_TOKENS`)
 *   for `/metrics` and the details of `/health/ready`.
 * - {@link EdgeTokenVerifier}: edge tokens checked in `edge_tokens`, accepted ones cached briefly.
 */
export * from './edge-token-verifier.ts';
export * from './operator-tokens.ts';
export * from './principal.ts';
