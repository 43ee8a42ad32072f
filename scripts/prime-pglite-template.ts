// Kept for `npx tsx scripts/prime-pglite-template.ts` (the Dockerfile, older docs): the work is in the .mjs beside it,
// which `npm install` runs through `prepare`.
import './prime-pglite-template.mjs';
