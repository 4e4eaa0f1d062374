// selfforge's reporter for Node's built-in test runner: one JSON line per finished test,
// with its file and the names of the suites around it. Loaded through NODE_OPTIONS, so
// `npm test` and other wrappers report the same way. Test code runs in child processes
// whose output reaches the runner as events, never as lines of this stream.
const PREFIX = "@@selfforge-node@@ ";

export default async function* reporter(source) {
  const stacks = new Map(); // file -> names of the tests started, by nesting level
  for await (const event of source) {
    const d = event.data || {};
    const file = d.file || "";
    if (event.type === "test:start") {
      const stack = stacks.get(file) || [];
      stack.length = d.nesting;
      stack.push(d.name);
      stacks.set(file, stack);
    } else if (event.type === "test:pass" || event.type === "test:fail") {
      const details = d.details || {};
      if (details.type === "suite") continue;
      const path = (stacks.get(file) || []).slice(0, d.nesting);
      let outcome = event.type === "test:pass" ? "passed" : "failed";
      if (d.skip !== undefined && d.skip !== false) outcome = "skipped";
      if (d.todo !== undefined && d.todo !== false) outcome = "skipped";
      const error = details.error ? String(details.error.cause || details.error) : "";
      yield PREFIX + JSON.stringify({
        file, names: [...path, d.name], outcome, secs: (details.duration_ms || 0) / 1000,
        msg: error.split("\n")[0].slice(0, 300),
      }) + "\n";
    } else if (event.type === "test:diagnostic" && d.nesting === 0) {
      yield PREFIX + JSON.stringify({ diagnostic: String(d.message || "") }) + "\n";
    }
  }
  yield PREFIX + JSON.stringify({ finished: true }) + "\n";
}
