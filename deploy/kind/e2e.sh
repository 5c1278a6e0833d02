#!/usr/bin/env bash
# End-to-end run of a01gym on a local kind cluster. Needs Docker, kind, kubectl and helm.
#
#   deploy/kind/e2e.sh            # build, install, check, clean up
#   A01GYM_E2E_KEEP=1 deploy/kind/e2e.sh   # leave the cluster and release running
#
# Steps: build both images -> create the kind cluster (unless it exists) -> load the images
# -> helm install the chart (deploy/kind/values.yaml, gateway at 0 replicas) -> wait for the
# operator, the warm pool and the factory Job, then scale the gateway up -> apply
# examples/episode.yaml and wait for Ready -> port-forward the gateway and run
# `a01gym eval --agent reference` through it -> clean up (trap, also on failure).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="${ROOT}/deploy/kind"
CLUSTER="${A01GYM_KIND_CLUSTER:-a01gym}"
NAMESPACE="${A01GYM_E2E_NAMESPACE:-a01gym-e2e}"
RELEASE="${A01GYM_E2E_RELEASE:-a01gym}"
TAG="${A01GYM_E2E_TAG:-e2e}"
EPISODES="${A01GYM_E2E_EPISODES:-2}"
KEEP="${A01GYM_E2E_KEEP:-0}"
TIMEOUT="${A01GYM_E2E_TIMEOUT:-600s}"
PLATFORM_IMAGE="a01gym/a01gym:${TAG}"
SANDBOX_IMAGE="a01gym/sandbox:${TAG}"
CONTEXT="kind-${CLUSTER}"
OUT="$(mktemp -d "${TMPDIR:-/tmp}/a01gym-e2e.XXXXXX")"

created_cluster=0
installed=0
forward_pid=""

log() { printf '\n==> %s\n' "$*" >&2; }

kc() { kubectl --context "${CONTEXT}" --namespace "${NAMESPACE}" "$@"; }
# Episodes, pools and sandbox pods live in the chart's sandbox namespace (its default layout).
SANDBOXES="${NAMESPACE}-sandboxes"
ks() { kubectl --context "${CONTEXT}" --namespace "${SANDBOXES}" "$@"; }

cleanup() {
  local code=$?
  set +e
  if [[ -n "${forward_pid}" ]]; then
    kill "${forward_pid}" 2>/dev/null
    wait "${forward_pid}" 2>/dev/null
  fi
  if [[ "${code}" -ne 0 && "${installed}" -eq 1 ]]; then
    log "failed (exit ${code}); state of namespace ${NAMESPACE}:"
    kc get pods,jobs -o wide
    ks get episodes,sandboxpools,pods -o wide
    kc logs "deployment/${RELEASE}-operator" --tail=50
    kc logs "deployment/${RELEASE}-gateway" --tail=50
  fi
  if [[ "${KEEP}" == "1" ]]; then
    log "A01GYM_E2E_KEEP=1: leaving cluster ${CLUSTER} and release ${RELEASE} running"
  else
    if [[ "${installed}" -eq 1 ]]; then
      log "uninstalling ${RELEASE}"
      ks delete episodes --all --wait=true --timeout=60s
      helm --kube-context "${CONTEXT}" uninstall "${RELEASE}" --namespace "${NAMESPACE}" --wait
      kubectl --context "${CONTEXT}" delete namespace "${NAMESPACE}" --wait=false
    fi
    if [[ "${created_cluster}" -eq 1 ]]; then
      log "deleting kind cluster ${CLUSTER}"
      kind delete cluster --name "${CLUSTER}"
    fi
  fi
  rm -rf "${OUT}"
  exit "${code}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in docker kind kubectl helm; do
  command -v "${tool}" >/dev/null || { echo "e2e.sh needs ${tool} on PATH" >&2; exit 2; }
done
docker info >/dev/null 2>&1 || { echo "e2e.sh needs a running Docker daemon" >&2; exit 2; }

log "building ${PLATFORM_IMAGE} and ${SANDBOX_IMAGE}"
docker build -t "${PLATFORM_IMAGE}" -f "${ROOT}/Dockerfile" "${ROOT}"
docker build -t "${SANDBOX_IMAGE}" -f "${ROOT}/sandbox-image/Dockerfile" "${ROOT}"

if kind get clusters 2>/dev/null | grep -qx "${CLUSTER}"; then
  log "using existing kind cluster ${CLUSTER}"
else
  log "creating kind cluster ${CLUSTER}"
  kind create cluster --name "${CLUSTER}" --config "${HERE}/kind-config.yaml" --wait 120s
  created_cluster=1
fi

log "loading images into ${CLUSTER}"
kind load docker-image --name "${CLUSTER}" "${PLATFORM_IMAGE}" "${SANDBOX_IMAGE}"

log "installing chart into namespace ${NAMESPACE}"
kubectl --context "${CONTEXT}" create namespace "${NAMESPACE}" --dry-run=client -o yaml \
  | kubectl --context "${CONTEXT}" apply -f -
token="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
kc create secret generic a01gym-gateway-token --from-literal=token="${token}" \
  --dry-run=client -o yaml | kc apply -f -
installed=1
helm --kube-context "${CONTEXT}" upgrade --install "${RELEASE}" "${ROOT}/charts/a01gym" \
  --namespace "${NAMESPACE}" \
  --values "${HERE}/values.yaml" \
  --set "image.tag=${TAG}" \
  --set "sandbox.image.tag=${TAG}" \
  --set gateway.replicas=0 \
  --wait --timeout "${TIMEOUT}"

log "waiting for the operator and the warm pool"
kc rollout status "deployment/${RELEASE}-operator" --timeout="${TIMEOUT}"
pool_replicas="$(ks get sandboxpool default -o jsonpath='{.spec.replicas}')"
ks wait sandboxpool/default --for=jsonpath='{.status.readyReplicas}'="${pool_replicas}" \
  --timeout="${TIMEOUT}"

log "waiting for the factory Job to fill the scenario cache"
kc wait job --selector "app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=factory" \
  --for=condition=complete --timeout="${TIMEOUT}"
# The gateway needs scenarios to start: it was installed with 0 replicas, scale it up now.
kc scale "deployment/${RELEASE}-gateway" --replicas=1
kc rollout status "deployment/${RELEASE}-gateway" --timeout="${TIMEOUT}"

log "kubectl apply -f examples/episode.yaml"
ks apply -f "${ROOT}/examples/episode.yaml"
ks wait episode/example --for=condition=Ready --timeout="${TIMEOUT}"
ks get episode example -o wide
ks delete episode example --wait=true --timeout=60s

log "port-forwarding the gateway"
port="${A01GYM_E2E_PORT:-18000}"
gateway_port="$(kc get service "${RELEASE}-gateway" -o jsonpath='{.spec.ports[0].port}')"
kc port-forward --address 127.0.0.1 "service/${RELEASE}-gateway" "${port}:${gateway_port}" \
  >"${OUT}/port-forward.log" 2>&1 &
forward_pid=$!
for _ in $(seq 1 50); do
  if curl -fsS "http://127.0.0.1:${port}/health" >/dev/null 2>&1; then
    break
  fi
  sleep 0.2
done
curl -fsS "http://127.0.0.1:${port}/health" >/dev/null

# The host's a01gym if there is one (the repo's venv first), else the platform image.
if [[ -x "${ROOT}/.venv/bin/a01gym" ]]; then
  a01gym_cmd=("${ROOT}/.venv/bin/a01gym")
elif command -v a01gym >/dev/null; then
  a01gym_cmd=(a01gym)
else
  a01gym_cmd=(docker run --rm --network host --user "$(id -u):$(id -g)"
    -v "${OUT}:${OUT}" "${PLATFORM_IMAGE}")
fi

log "a01gym eval --agent reference --episodes ${EPISODES} through the gateway"
# The token leads the path (/t/<token>): the OpenEnv client sends no headers.
"${a01gym_cmd[@]}" eval \
  --url "http://127.0.0.1:${port}/t/${token}" \
  --agent reference \
  --episodes "${EPISODES}" \
  --concurrency 1 \
  --out "${OUT}/eval" \
  --json | tee "${OUT}/summary.json"

log "checking that every sandbox was released"
for _ in $(seq 1 60); do
  left="$(ks get pods --selector 'a01gym.dev/state=claimed' --no-headers 2>/dev/null | wc -l)"
  [[ "${left}" -eq 0 ]] && break
  sleep 1
done
if [[ "${left}" -ne 0 ]]; then
  echo "e2e: ${left} claimed sandbox pods left after the eval" >&2
  exit 1
fi
log "e2e passed"
