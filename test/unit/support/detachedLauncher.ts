// Stands in for a VS Code extension host in tests: starts the engine host exactly as the extension
// does (launchDetachedHost), prints its pid, then stays alive until the test kills it.
import { launchDetachedHost, type HostLaunchSpec } from '../../../src/extension/hostLaunch';

const spec = JSON.parse(process.argv[2]) as HostLaunchSpec;
const { child } = launchDetachedHost(spec);
process.stdout.write(`${child.pid}\n`);
setInterval(() => undefined, 60_000);
