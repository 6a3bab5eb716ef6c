// The shape of one bench run's results, apart from the code that measures (bench.ts), judges
// (goals.ts) and prints (report.ts) it, so each of those imports it without importing the others.
import type { describeVersions, MachineInfo } from './machine.js';
import type { OverheadResult } from './overhead.js';
import type { StoreResult } from './store-start.js';
import type { ThroughputResult } from './throughput.js';
import type { InstancesResult } from './instances.js';
import type { TokenResult } from './tokens.js';
import type { SandboxStartupResult } from './sandbox-startup.js';
import type { DashboardResult } from './dashboard.js';
import type { SoakResult } from './soak.js';
import type { StreamingResult } from './streaming.js';

/** The goals, measured and printed as met / missed with the numbers; never asserted. */
export interface Goal {
  goal: string;
  status: 'met' | 'missed' | 'not measured';
  detail: string;
}

export interface BenchResult {
  schema: 'hermes-bench/1';
  mode: string;
  startedAt: string;
  durationS: number;
  machine: MachineInfo;
  versions: ReturnType<typeof describeVersions>;
  peersIncluded: string[];
  overhead?: OverheadResult;
  throughput?: ThroughputResult;
  tokens?: TokenResult;
  store?: StoreResult;
  instances?: InstancesResult;
  sandbox?: SandboxStartupResult;
  dashboard?: DashboardResult;
  soak?: SoakResult;
  streaming?: StreamingResult;
  goals: Goal[];
  errors: string[];
  notes: string[];
}
