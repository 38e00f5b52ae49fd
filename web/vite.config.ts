// Builds the page into crates/dexd/page, which the dexd binary embeds (rust-embed). File names
// are fixed (no content hashes) so that a rebuild from the same sources and pinned packages is
// byte-identical to the committed bundle; dexd serves them with `Cache-Control: no-cache`.
import { defineConfig } from "vite";

export default defineConfig({
  base: "./",
  // The TypeScript client's sources (clients/typescript/src) are bundled with the page; one viem
  // for both, the page's.
  resolve: { dedupe: ["viem"] },
  build: {
    outDir: process.env.DEXD_PAGE_OUT_DIR ?? "../crates/dexd/page",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    modulePreload: { polyfill: false },
    rollupOptions: {
      output: {
        entryFileNames: "assets/page.js",
        chunkFileNames: "assets/[name].js",
        assetFileNames: "assets/[name][extname]",
      },
    },
  },
});
