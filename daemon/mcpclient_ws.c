/* daemon/mcpclient_ws.c - the ws transport of the MCP client: not written yet (the next
 * commit); until then such a server fails with a message that says so. */
#include "mcpclient_int.h"

static void run(struct mcpclient *c, struct errinfo *why)
{
    (void)c;
    errinfo_set(why, ERR_UNAVAILABLE, "this runboxd cannot connect ws servers yet");
}

const struct mcpclient_transport mcpclient__ws = {.name = "ws", .run = run};
