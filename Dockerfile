# syntax=docker/dockerfile:1
# The production image: multi-stage (compile with dev dependencies, run with production ones only),
# non-root, with a HEALTHCHECK. CI lints this file (dockerfile-utils) and cannot build it: base
# images cannot be pulled there. docs/running-the-service.md says how it is run.
# Node 24 (LTS, supported until April 2028); the code also runs on Node 20.19+ and 22 (package.json
# engines), which development machines and CI use.
# Build: compile TypeScript with the full dependency set.
FROM node:24-slim AS build
WORKDIR /app
# No install-time analytics ping from @scarf/scarf (pulled in by swagger-ui-express).
ENV SCARF_ANALYTICS=false
COPY package.json package-lock.json ./
# The root's npm workspaces include the client package (packages/client): npm ci needs its manifest.
COPY packages/client/package.json ./packages/client/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY generated ./generated
RUN npm run build

# Runtime: production dependencies only, compiled JS, and the bundled spec the app loads.
FROM node:24-slim AS runtime
# HOST: a container is reached through its network interface, not its loopback; listening there
# without BOOTSTRAP_TOKEN is refused (docs/settings.md), so `docker run` needs one (compose.yaml
# asks for it). MAIL_DIR: without SMTP_URL mail is written under /data, which the non-root user owns.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    DATA_DIR=/data \
    MAIL_DIR=/data/mail \
    PORT=3000
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json ./packages/client/
# --ignore-scripts: the only production install script is @scarf/scarf's analytics ping (via
# swagger-ui-express); native modules (@node-rs/argon2) come as prebuilt optional packages.
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY generated ./generated
COPY openapi ./openapi
# The embedded database (PGlite) and the mail folder live under DATA_DIR; both must be writable by
# the non-root user. A named volume mounted on /data/mail starts with this ownership (compose.yaml).
RUN mkdir -p /data/mail && chown node:node /data /data/mail
VOLUME ["/data"]
USER node
# The API; the metrics listener when METRICS_PORT=9464 is set (compose.yaml sets it).
EXPOSE 3000 9464
# Ready = the database answers and the process is not shutting down (GET /ready). The slim image
# has no curl: Node's own fetch asks.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The same node flags as `npm start` (docs/settings.md; test/seams/start-command checks they agree).
CMD ["node", "--heap-growing-percent=50", "--max-semi-space-size=8", "--expose-gc", "dist/src/main.js"]
