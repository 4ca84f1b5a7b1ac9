// `go build ./...` walks every directory below the module root, node_modules
// included, and some npm packages ship .go files. A go.mod here makes
// node_modules a module of its own, which ./... leaves out.
import { writeFileSync } from 'node:fs';

writeFileSync(new URL('../node_modules/go.mod', import.meta.url), 'module coopr.invalid/node_modules\n');
