/** The repository root (where package.json is) and its compiled build folder. */
export declare const ROOT: string;
export declare const DIST: string;
/** Undefined when `dist/<entry>` is built and current; otherwise one line naming the problem and the fix. */
export declare function buildProblem(entry: string, root?: string): string | undefined;
