/**
 * Which error codes can each operation answer? Read from the code, not from tests: starting at the
 * operation's handler (the `HandlerMap` objects in src/), every function, method and class it can
 * reach inside src/ is walked, and every error it constructs is collected as (status, code).
 * Permission checks are read where they are called (`authorize(m, 'teams.manage')` → that key's
 * 403 reason), resource-role checks likewise (`requireRole(role, needed, 'plugin')`, the roles
 * `needed` can hold by its type). The result over-approximates (a branch that cannot run still
 * counts), which is the safe side for a client's exhaustive switch.
 *
 * Used by test/contract/error-codes.test.ts (the spec's enums against the code, both ways) and by
 * `npm run spec:errors`, which prints what an operation's error responses must list.
 */
import path from 'node:path';
import { readdirSync, statSync } from 'node:fs';
import ts from 'typescript';
import { PERMISSION_CATALOGUE } from '../src/access/permissions';

const ROOT = path.resolve(__dirname, '..');
const SRC = path.join(ROOT, 'src');
const ERRORS_FILE = path.join(SRC, 'lib', 'errors.ts');

/** Error class → the status it answers, and which constructor argument is its code. */
const CLASSES: Record<string, { status: number | 'arg0'; codeArg: number; fixed?: string }> = {
  Invalid: { status: 400, codeArg: -1, fixed: 'invalid_request' },
  Unauthorized: { status: 401, codeArg: -1, fixed: 'unauthorized' },
  Unauthenticated: { status: 401, codeArg: 0 },
  Forbidden: { status: 403, codeArg: 0 },
  NotFound: { status: 404, codeArg: 0 },
  Conflict: { status: 409, codeArg: 0 },
  PayloadTooLarge: { status: 413, codeArg: -1, fixed: 'payload_too_large' },
  Upstream: { status: 502, codeArg: 0 },
  Unavailable: { status: 503, codeArg: -1, fixed: 'service_unavailable' },
  RateLimited: { status: 429, codeArg: -1, fixed: 'rate_limited' },
  NotImplemented: { status: 501, codeArg: -1, fixed: 'not_implemented' },
  CodedError: { status: 'arg0', codeArg: 1 },
  // SCIM answers RFC 7644 error bodies (status, scimType), not codes.
  ScimError: { status: 0, codeArg: -1 },
};

export type OperationErrors = Map<number, Set<string>>;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...sourceFiles(full));
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

function literalValues(checker: ts.TypeChecker, node: ts.Expression): string[] | null {
  if (ts.isStringLiteralLike(node)) return [node.text];
  const type = checker.getTypeAtLocation(node);
  const parts = type.isUnion() ? type.types : [type];
  const values: string[] = [];
  for (const part of parts) {
    if (!part.isStringLiteral()) return null;
    values.push(part.value);
  }
  return values;
}

export function analyseErrors(): { operations: Map<string, OperationErrors>; unresolved: string[] } {
  const config = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), (f) => ts.sys.readFile(f));
  const options = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT).options;
  const program = ts.createProgram(sourceFiles(SRC), { ...options, noEmit: true });
  const checker = program.getTypeChecker();
  const inSrc = (file: ts.SourceFile) => file.fileName.startsWith(SRC) && !file.isDeclarationFile;
  const unresolved: string[] = [];

  const memo = new Map<ts.Node, Array<[number, string]>>();
  const where = (node: ts.Node) => {
    const file = node.getSourceFile();
    return `${path.relative(ROOT, file.fileName)}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  };

  function declarationOf(node: ts.Node): ts.Declaration | undefined {
    let symbol = checker.getSymbolAtLocation(node);
    if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
    const decl = symbol?.valueDeclaration ?? symbol?.declarations?.[0];
    // The error classes themselves are read through CLASSES, not walked (withVariant re-throws its own reason).
    return decl && inSrc(decl.getSourceFile()) && decl.getSourceFile().fileName !== ERRORS_FILE ? decl : undefined;
  }

  /** The walkable body a reference leads to: a function, a method, a class (its constructor), an arrow in a const. */
  function bodyOf(decl: ts.Declaration): ts.Node | undefined {
    if (ts.isFunctionDeclaration(decl) || ts.isMethodDeclaration(decl) || ts.isConstructorDeclaration(decl)) return decl.body;
    if (ts.isClassDeclaration(decl)) return decl;
    if (ts.isVariableDeclaration(decl) && decl.initializer) return decl.initializer;
    if (ts.isPropertyAssignment(decl)) return decl.initializer;
    if (ts.isPropertyDeclaration(decl)) return decl.initializer;
    if (ts.isShorthandPropertyAssignment(decl)) return decl;
    return undefined;
  }

  function errorsOfNew(node: ts.NewExpression | ts.CallExpression, out: Array<[number, string]>): boolean {
    let name = ts.isIdentifier(node.expression) ? node.expression.text : undefined;
    if (node.expression.kind === ts.SyntaxKind.SuperKeyword) {
      // A subclass of an error class (PlanLimitReached, VersionMismatch): its super(...) call.
      let cls: ts.Node | undefined = node;
      while (cls && !ts.isClassDeclaration(cls)) cls = cls.parent;
      const base = cls && (cls as ts.ClassDeclaration).heritageClauses?.[0]?.types[0]?.expression;
      name = base && ts.isIdentifier(base) ? base.text : undefined;
    }
    const spec = name ? CLASSES[name] : undefined;
    if (!spec) return false;
    if (spec.status === 0) return true;
    const args = node.arguments ?? [];
    const status = spec.status === 'arg0' ? Number(args[0] && ts.isNumericLiteral(args[0]) ? args[0].text : NaN) : spec.status;
    const codes = spec.fixed ? [spec.fixed] : args[spec.codeArg] ? literalValues(checker, args[spec.codeArg]!) : null;
    if (!codes || Number.isNaN(status)) {
      unresolved.push(`${where(node)}: new ${name}(…) with a code that is not a string literal (or a union of them)`);
      return true;
    }
    for (const code of codes) out.push([status, code]);
    return true;
  }

  /** Checks named by their arguments: the permission key's reason, `<resource>_<role>_required`. */
  function errorsOfCall(node: ts.CallExpression, out: Array<[number, string]>): boolean {
    if (node.expression.kind === ts.SyntaxKind.SuperKeyword) return errorsOfNew(node, out);
    const callee = ts.isIdentifier(node.expression) ? node.expression.text : ts.isPropertyAccessExpression(node.expression) ? node.expression.name.text : '';
    const permissionArg = callee === 'authorize' ? 1 : callee === 'missingPermission' ? 0 : -1;
    if (permissionArg >= 0) {
      const keys = node.arguments[permissionArg] ? literalValues(checker, node.arguments[permissionArg]!) : null;
      if (!keys) {
        unresolved.push(`${where(node)}: ${callee}(…) with a permission that is not a literal`);
        return true;
      }
      for (const key of keys) {
        const entry = (PERMISSION_CATALOGUE as Record<string, { reason: string }>)[key];
        if (entry) out.push([403, entry.reason]);
      }
      return true;
    }
    if (callee === 'requireRole') {
      const needed = node.arguments[1] ? literalValues(checker, node.arguments[1]) : null;
      const resource = node.arguments[2] ? literalValues(checker, node.arguments[2]) : null;
      if (!needed || !resource) {
        unresolved.push(`${where(node)}: requireRole(…) with a role or resource that is not a literal`);
        return true;
      }
      for (const r of resource) for (const n of needed) out.push([403, `${r}_${n}_required`]);
      return true;
    }
    return false;
  }

  function walk(root: ts.Node): Array<[number, string]> {
    const known = memo.get(root);
    if (known) return known;
    const out: Array<[number, string]> = [];
    memo.set(root, out); // recursion stops here; the array fills in below
    const visit = (node: ts.Node): void => {
      if (ts.isNewExpression(node) && errorsOfNew(node, out)) return;
      if (ts.isCallExpression(node) && errorsOfCall(node, out)) return;
      if (ts.isIdentifier(node) && !(node.parent && ts.isPropertyAssignment(node.parent) && node.parent.name === node)) {
        const decl = declarationOf(node);
        const body = decl && bodyOf(decl);
        if (body && !isAncestor(body, node)) {
          if (ts.isClassDeclaration(body)) {
            for (const member of body.members) if (ts.isConstructorDeclaration(member) && member.body) out.push(...walk(member.body));
          } else {
            out.push(...walk(body));
          }
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(root);
    return out;
  }

  const operations = new Map<string, OperationErrors>();
  for (const file of program.getSourceFiles()) {
    if (!inSrc(file)) continue;
    ts.forEachChild(file, function find(node) {
      if (ts.isVariableDeclaration(node) && node.type && /^HandlerMap</.test(node.type.getText()) && node.initializer && ts.isObjectLiteralExpression(node.initializer)) {
        for (const prop of node.initializer.properties) {
          if (!prop.name) continue;
          const operationId = prop.name.getText().replace(/^['"]|['"]$/g, '');
          const found = walk(prop);
          const byStatus: OperationErrors = new Map();
          for (const [status, code] of found) {
            if (!byStatus.has(status)) byStatus.set(status, new Set());
            byStatus.get(status)!.add(code);
          }
          operations.set(operationId, byStatus);
        }
      }
      ts.forEachChild(node, find);
    });
  }
  return { operations, unresolved: [...new Set(unresolved)] };
}

function isAncestor(ancestor: ts.Node, node: ts.Node): boolean {
  for (let n: ts.Node | undefined = node; n; n = n.parent) if (n === ancestor) return true;
  return false;
}

if (require.main === module) {
  const started = Date.now();
  const { operations, unresolved } = analyseErrors();
  for (const [op, errors] of [...operations].sort()) {
    const parts = [...errors].sort(([a], [b]) => a - b).map(([s, codes]) => `${s}: ${[...codes].sort().join(', ')}`);
    console.log(`${op}  ${parts.join(' | ')}`);
  }
  for (const u of unresolved) console.log(`UNRESOLVED ${u}`);
  console.error(`${operations.size} operations in ${Date.now() - started} ms`);
}
