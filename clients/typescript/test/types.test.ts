/** The client's types are written by hand (src/types.ts); this holds each one to the OpenAPI
 * document a real dexd serves: the same field names, object by object, nested objects included.
 * A field the server adds or drops, or a name misspelled here, fails it. */

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { startDexd, stop } from "./server.js";

type Schema = Record<string, unknown>;

/** The client's types, parsed from its source. */
const source = ts.createSourceFile(
  "types.ts",
  readFileSync(join(import.meta.dirname, "../../src/types.ts"), "utf8"),
  ts.ScriptTarget.ES2022,
  true,
);
const declarations = new Map<string, ts.InterfaceDeclaration | ts.TypeAliasDeclaration>();
for (const statement of source.statements) {
  if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) declarations.set(statement.name.text, statement);
}

/** The object types a type node stands for (a union's members, a reference's declaration). */
function objectsOf(node: ts.Node): ts.NodeArray<ts.TypeElement>[] {
  if (ts.isInterfaceDeclaration(node)) {
    const inherited = (node.heritageClauses ?? []).flatMap((clause) =>
      clause.types.flatMap((type) => objectsOf(declarationOf(type.expression.getText(source)))));
    return [node.members, ...inherited];
  }
  if (ts.isTypeAliasDeclaration(node)) return objectsOf(node.type);
  if (ts.isTypeLiteralNode(node)) return [node.members];
  if (ts.isUnionTypeNode(node) || ts.isIntersectionTypeNode(node)) return node.types.flatMap(objectsOf);
  if (ts.isParenthesizedTypeNode(node)) return objectsOf(node.type);
  if (ts.isArrayTypeNode(node)) return objectsOf(node.elementType);
  if (ts.isTypeReferenceNode(node) && declarations.has(node.typeName.getText(source))) {
    return objectsOf(declarationOf(node.typeName.getText(source)));
  }
  return [];
}

function declarationOf(name: string): ts.InterfaceDeclaration | ts.TypeAliasDeclaration {
  const declaration = declarations.get(name);
  assert.ok(declaration, `src/types.ts declares no ${name}`);
  return declaration;
}

/** The field names of a client type, or of the object a path of fields leads to inside it. */
function clientFields(path: string[]): Set<string> {
  let objects = objectsOf(declarationOf(path[0]));
  for (const field of path.slice(1)) {
    const member = objects.flat().find((element) => ts.isPropertySignature(element) && element.name.getText(source) === field);
    assert.ok(member && ts.isPropertySignature(member) && member.type, `${path.join(".")}: no field ${field}`);
    objects = objectsOf(member.type);
  }
  const names = new Set<string>();
  for (const element of objects.flat()) {
    if (ts.isPropertySignature(element)) names.add(element.name.getText(source));
  }
  return names;
}

/** A schema with `$ref`s followed, as the objects it may be (`allOf` merged, `oneOf` each). */
function schemaObjects(document: Schema, schema: Schema): Schema[] {
  if (typeof schema.$ref === "string") {
    const name = schema.$ref.replace("#/components/schemas/", "");
    return schemaObjects(document, ((document.components as Schema).schemas as Record<string, Schema>)[name]);
  }
  if (schema.type === "array" && schema.items) return schemaObjects(document, schema.items as Schema);
  const found: Schema[] = schema.properties ? [schema] : [];
  for (const key of ["allOf", "oneOf", "anyOf"]) {
    for (const member of (schema[key] as Schema[] | undefined) ?? []) found.push(...schemaObjects(document, member));
  }
  return found;
}

/** The field names of a document's schema, or of the object a path of fields leads to in it. */
function documentFields(document: Schema, path: string[]): Set<string> {
  const schemas = (document.components as Schema).schemas as Record<string, Schema>;
  assert.ok(schemas[path[0]], `the document has no schema ${path[0]}`);
  let objects = schemaObjects(document, schemas[path[0]]);
  for (const field of path.slice(1)) {
    const next = objects.map((object) => (object.properties as Record<string, Schema>)[field]).filter(Boolean);
    assert.ok(next.length, `${path.join(".")}: the document has no field ${field}`);
    objects = next.flatMap((schema) => schemaObjects(document, schema));
  }
  return new Set(objects.flatMap((object) => Object.keys(object.properties as Schema)));
}

/**
 * Each client type and the document's object it stands for, with the fields the client leaves out
 * on purpose (a response's `chainId`, which the client was made with) or adds (none but listed).
 */
const PAIRS: { client: string[]; document: string[]; left?: string[]; added?: string[] }[] = [
  { client: ["Order"], document: ["Order"] },
  { client: ["Trade"], document: ["Trade"] },
  { client: ["AccountTrade"], document: ["AccountTrade"] },
  { client: ["Transfer"], document: ["Transfer"] },
  { client: ["ListedWithdrawal"], document: ["ListedWithdrawal"] },
  { client: ["Balance"], document: ["Balance"] },
  { client: ["Agent"], document: ["Agent"] },
  { client: ["Custody"], document: ["Custody"] },
  { client: ["Level"], document: ["OrderBookResponse", "levels"] },
  { client: ["Candle"], document: ["CandleResponse", "candles"] },
  { client: ["Asset"], document: ["AssetsResponse", "assets"] },
  { client: ["Pair"], document: ["PairsResponse", "pairs"] },
  { client: ["Chain"], document: ["ChainsResponse", "chains"] },
  { client: ["SubaccountTransfer"], document: ["SubaccountTransferResponse", "transfer"] },
  { client: ["Subaccount"], document: ["SubaccountsResponse", "subaccounts"] },
  { client: ["Twap"], document: ["Twap"] },
  { client: ["Eip712"], document: ["Eip712Response"], left: ["chainId"] },
  { client: ["Placed"], document: ["AddOrderResponse"] },
  { client: ["OrderDetail"], document: ["OrderDetailResponse"] },
  { client: ["BatchProof"], document: ["OrderDetailResponse", "batch"] },
  { client: ["Position"], document: ["PositionResponse", "position"] },
  { client: ["Tradable"], document: ["TradableResponse", "tradable"] },
  { client: ["Tradable", "buy"], document: ["TradableResponse", "tradable", "buy"] },
  { client: ["Reserve"], document: ["ReservesResponse", "assets"] },
  { client: ["Reserves"], document: ["ReservesResponse"], left: ["chainId"] },
  { client: ["RateLimits"], document: ["RateLimitsResponse"] },
  { client: ["LiabilityRoot"], document: ["AuditRootsResponse", "roots"] },
  { client: ["LiabilityRoot"], document: ["LiabilityRootsResponse", "roots"], added: ["leaves"] },
  { client: ["RootTotal"], document: ["LiabilityRootsResponse", "roots", "totals"] },
  { client: ["LiabilityProof"], document: ["LiabilityProofResponse"], left: ["chainId"] },
  { client: ["ProofLeaf"], document: ["LiabilityProofResponse", "leaves"] },
  { client: ["LiabilityLeaf"], document: ["LiabilityLeafLine"] },
  { client: ["CustodyState"], document: ["CustodyResponse"], left: ["chainId"] },
  { client: ["CustodyState", "roots"], document: ["CustodyResponse", "roots"] },
  { client: ["CustodyState", "roots", "foreignRoot"], document: ["CustodyResponse", "roots", "foreignRoot"] },
  { client: ["CustodyState", "status"], document: ["CustodyResponse", "status"] },
  { client: ["JournalLine"], document: ["AuditJournalLine"] },
];

test("every hand-written type has the fields of the OpenAPI document's object", async () => {
  const server = await startDexd();
  let document: Schema;
  try {
    document = (await (await fetch(`${server.url}/openapi.json`)).json()) as Schema;
  } finally {
    await stop(server);
  }
  const differences: string[] = [];
  for (const pair of PAIRS) {
    const expected = documentFields(document, pair.document);
    for (const name of pair.left ?? []) expected.delete(name);
    for (const name of pair.added ?? []) expected.add(name);
    const actual = clientFields(pair.client);
    const missing = [...expected].filter((name) => !actual.has(name));
    const unknown = [...actual].filter((name) => !expected.has(name));
    if (missing.length || unknown.length) {
      differences.push(`${pair.client.join(".")} against ${pair.document.join(".")}: missing ${missing.join(", ") || "none"}; ` +
        `not in the document ${unknown.join(", ") || "none"}`);
    }
  }
  assert.deepEqual(differences, []);
});
