"""The Worker entry: route fetch to the app, run one runner tick from the cron trigger."""

from workers import WorkerEntrypoint

from scheduling.runtimes.workers.bridge import (
    build_app,
    env_fingerprint,
    to_core_request,
    to_workers_response,
)

_apps = {}  # built once per isolate; rebuilt only if the variables change


def _app_for(env):
    key = env_fingerprint(env)
    if key not in _apps:
        _apps.clear()
        _apps[key] = build_app(env)
    return _apps[key]


class Default(WorkerEntrypoint):
    async def fetch(self, request):
        app = _app_for(self.env)
        return to_workers_response(await app.handle(await to_core_request(request)))

    async def scheduled(self, controller, env=None, ctx=None):
        await _app_for(self.env).tick(int(controller.scheduledTime))
