"""The OpenEnv gateway: FastAPI app, sessions, auth, metrics. Top layer; imports ``env``."""
