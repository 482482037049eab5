// Validates every document of a multi-document Kubernetes YAML file against
// the Kubernetes and prometheus-operator API schemas (kubernetes-models).
// Usage: node validate.mjs FILE; exit 0 when every document is valid.
import { readFileSync } from "node:fs";
import yaml from "js-yaml";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Service } from "kubernetes-models/v1/Service";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";

const models = {
  "v1/ConfigMap": ConfigMap,
  "v1/Service": Service,
  "apps/v1/DaemonSet": DaemonSet,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
  "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule,
};

const file = process.argv[2];
let failures = 0;
const docs = yaml.loadAll(readFileSync(file, "utf8")).filter((d) => d != null);
for (const doc of docs) {
  const key = `${doc.apiVersion}/${doc.kind}`;
  const name = `${key} ${doc.metadata?.name ?? "(no name)"}`;
  const Model = models[key];
  if (!Model) {
    console.log(`${name}: no schema known for this kind`);
    failures++;
    continue;
  }
  try {
    new Model(doc).validate();
    console.log(`${name}: valid`);
  } catch (e) {
    console.log(`${name}: INVALID: ${e.message}`);
    failures++;
  }
}
if (docs.length === 0) {
  console.log(`${file}: no documents`);
  failures++;
}
process.exit(failures === 0 ? 0 : 1);
