// Lint rule jobvisor/no-pool-connect: a pg Pool lends clients only through
// src/db/borrow.ts (borrow / withClient / withConnection). A client borrowed
// with `pool.connect()` has no error listener while it is out, and a
// connection that ends then takes the process down. The rule asks the type
// checker, so it finds `db.connect()`, `ctx.db.connect()` and a `Db` union
// alike, and leaves `new pg.Client(...).connect()` alone.
/** True when `type`, or a member of its union, is a pg Pool (it has `totalCount` and `connect`). */
function isPoolType(type) {
  const types = type.isUnion() ? type.types : [type];
  return types.some((t) => t.getProperty('totalCount') !== undefined && t.getProperty('connect') !== undefined);
}

export const noPoolConnect = {
  meta: {
    type: 'problem',
    docs: { description: 'borrow pool clients through src/db/borrow.ts, never pool.connect()' },
    messages: {
      poolConnect:
        "borrow a client with withClient()/borrow() from src/db/borrow.ts: a client from pool.connect() has no 'error' listener while it is borrowed",
    },
    schema: [],
  },
  create(context) {
    const services = context.sourceCode.parserServices;
    if (!services?.program) throw new Error('jobvisor/no-pool-connect needs type information (parserOptions.project)');
    const checker = services.program.getTypeChecker();
    return {
      "CallExpression > MemberExpression.callee[property.name='connect']"(node) {
        if (node.object.type === 'Super' || node.object.type === 'ThisExpression') return;
        const type = checker.getTypeAtLocation(services.esTreeNodeToTSNodeMap.get(node.object));
        if (isPoolType(type)) context.report({ node, messageId: 'poolConnect' });
      },
    };
  },
};

export default { rules: { 'no-pool-connect': noPoolConnect } };
