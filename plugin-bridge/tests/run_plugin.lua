-- tests/run_plugin.lua - runs the plugin's REAL poll loop (Main, Bridge, Executor, Console and
-- the tool handlers) under lua5.1 against a real runboxd, over HTTP through LuaSocket, with the
-- fake place of tests/fake as the open DataModel. For end-to-end tests and by hand.
--
--   lua5.1 plugin-bridge/tests/run_plugin.lua URL [options]
--     --instance ID       the instance id (default: a fresh GUID-like id)
--     --role ROLE         edit (default), server or client
--     --place-id N        the place id it reports (default 12345)
--     --place-name NAME   the place name it reports (default TestPlace)
--     --bundle FILE       run the built bundle (dist/RunboxBridge.lua) instead of src/ modules
--     --fail TOOL         TOOL's handler fails with "injected failure in TOOL"
--     --die-on TOOL       exit at once (no answer, no /disconnect) on receiving TOOL
--     --token TOKEN       the bearer token to send
--
-- It prints one line per event on stdout ("run_plugin: connected", "run_plugin: command <tool>
-- <id>", "run_plugin: dying while holding <tool> <id>", "run_plugin: disconnected") and runs
-- until stdin reaches EOF or reads a line "quit" (then it disconnects like an unloading plugin:
-- POST /disconnect) or until it is killed. A line "sync X" on stdin is answered "run_plugin:
-- sync X" on stdout, after every line printed before it: a test that reads up to that line has
-- seen every command the plugin ran so far. Needs lua-socket and lua-cjson.

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. here .. "/?/init.lua;" .. here .. "/fake/?.lua;" .. package.path

local socket = require("socket")
local X = require("runtime_extras")
local Fake = require("fake")

local function usage(msg)
	io.stderr:write("run_plugin: " .. msg .. "\nusage: lua5.1 run_plugin.lua URL [--instance ID] [--role edit|server|client] "
		.. "[--place-id N] [--place-name NAME] [--bundle FILE] [--fail TOOL] [--die-on TOOL] [--token T]\n")
	os.exit(2)
end

local opts = { role = "edit", placeId = 12345, placeName = "TestPlace" }
local i = 1
while i <= #arg do
	local a = arg[i]
	local function value()
		i = i + 1
		if arg[i] == nil then
			usage(a .. " needs a value")
		end
		return arg[i]
	end
	if a == "--instance" then
		opts.instance = value()
	elseif a == "--role" then
		opts.role = value()
	elseif a == "--place-id" then
		opts.placeId = tonumber(value())
	elseif a == "--place-name" then
		opts.placeName = value()
	elseif a == "--bundle" then
		opts.bundle = value()
	elseif a == "--fail" then
		opts.fail = value()
	elseif a == "--die-on" then
		opts.dieOn = value()
	elseif a == "--token" then
		opts.token = value()
	elseif string.sub(a, 1, 2) == "--" then
		usage("unknown option " .. a)
	elseif opts.url == nil then
		opts.url = a
	else
		usage("unexpected argument " .. a)
	end
	i = i + 1
end
if opts.url == nil then
	usage("the daemon URL is required")
end

local function say(line)
	io.stdout:write("run_plugin: " .. line .. "\n")
	io.stdout:flush()
end

local sched = X.scheduler({
	real = true,
	onError = function(err)
		io.stderr:write("run_plugin: thread error: " .. tostring(err) .. "\n")
	end,
})

---------------------------------------------------------------------------------------------
-- HTTP/1.1 over a non-blocking LuaSocket TCP socket, parking the calling thread on the
-- scheduler while the socket is not ready (so the poll loop, command threads and the console
-- timer all run at once, as they do in Studio). Raises like RequestAsync does.

local HTTP_TIMEOUT = 30 -- seconds; the daemon holds a poll 15 s

local function dechunk(body)
	local out, pos = {}, 1
	while true do
		local sizeLine, after = string.match(body, "^([0-9a-fA-F]+)[^\r\n]*\r\n()", pos)
		if sizeLine == nil then
			error("HttpError: ServerProtocolError (bad chunked body)", 0)
		end
		local size = tonumber(sizeLine, 16)
		if size == 0 then
			break
		end
		table.insert(out, string.sub(body, after, after + size - 1))
		pos = after + size + 2
	end
	return table.concat(out)
end

local function request(req)
	local host, port, path = string.match(req.Url, "^http://([^/:]+):?(%d*)(/?.*)$")
	if host == nil then
		error("HttpError: InvalidUrl (" .. tostring(req.Url) .. ")", 0)
	end
	port = tonumber(port) or 80
	if path == "" then
		path = "/"
	end
	local deadline = socket.gettime() + HTTP_TIMEOUT
	local sock = assert(socket.tcp())
	sock:settimeout(0)
	local ok, err = sock:connect(host, port)
	if not ok and err == "timeout" then
		if not sched.waitIo(sock, "w", deadline) then
			sock:close()
			error("HttpError: TimedOut (connect)", 0)
		end
		ok, err = sock:connect(host, port)
		if not ok and err == "already connected" then
			ok = true
		end
	end
	if not ok then
		sock:close()
		error("HttpError: ConnectFail (" .. tostring(err) .. ")", 0)
	end
	local lines = { req.Method .. " " .. path .. " HTTP/1.1", "Host: " .. host .. ":" .. port, "Connection: close" }
	for k, v in pairs(req.Headers or {}) do
		table.insert(lines, k .. ": " .. v)
	end
	if req.Body ~= nil then
		table.insert(lines, "Content-Length: " .. #req.Body)
	end
	local data = table.concat(lines, "\r\n") .. "\r\n\r\n" .. (req.Body or "")
	local sent = 0
	while sent < #data do
		local last, serr, partial = sock:send(data, sent + 1)
		if last ~= nil then
			sent = last
		else
			sent = partial or sent
			if serr ~= "timeout" then
				sock:close()
				error("HttpError: ConnectionClosed (" .. tostring(serr) .. ")", 0)
			end
			if not sched.waitIo(sock, "w", deadline) then
				sock:close()
				error("HttpError: TimedOut (send)", 0)
			end
		end
	end
	local chunks = {}
	while true do
		local got, rerr, partial = sock:receive(65536)
		local piece = got or partial
		if piece ~= nil and piece ~= "" then
			table.insert(chunks, piece)
		end
		if got == nil then
			if rerr == "closed" then
				break
			end
			if rerr ~= "timeout" then
				sock:close()
				error("HttpError: NetFail (" .. tostring(rerr) .. ")", 0)
			end
			if not sched.waitIo(sock, "r", deadline) then
				sock:close()
				error("HttpError: TimedOut (receive)", 0)
			end
		end
	end
	sock:close()
	local raw = table.concat(chunks)
	local head, body = string.match(raw, "^(.-)\r\n\r\n(.*)$")
	if head == nil then
		error("HttpError: ConnectionClosed (no answer)", 0)
	end
	local status, message = string.match(head, "^HTTP/%d%.%d (%d+) ?([^\r\n]*)")
	local headers = {}
	for k, v in string.gmatch(head, "\r\n([^:\r\n]+):%s*([^\r\n]*)") do
		headers[string.lower(k)] = v
	end
	if headers["transfer-encoding"] and string.find(string.lower(headers["transfer-encoding"]), "chunked") then
		body = dechunk(body)
	elseif headers["content-length"] then
		body = string.sub(body, 1, tonumber(headers["content-length"]))
	end
	status = tonumber(status)
	return { Success = status >= 200 and status <= 299, StatusCode = status, StatusMessage = message, Headers = headers, Body = body }
end

---------------------------------------------------------------------------------------------
-- The place, the tools, the plugin.

local place = Fake.newPlace()
-- The fake's yield-safe pcall, made to take C functions too, as Roblox's does.
_G.pcall = X.cSafe(_G.pcall)
-- One scheduler for everything: the handlers' task.* are ours too.
_G.task = {
	spawn = sched.spawn,
	wait = sched.wait,
	delay = function(t, f, ...)
		local args = { n = select("#", ...), ... }
		return sched.spawn(function()
			sched.wait(t)
			f(unpack(args, 1, args.n))
		end)
	end,
	defer = function(f, ...)
		local args = { n = select("#", ...), ... }
		return sched.spawn(function()
			sched.wait(0)
			f(unpack(args, 1, args.n))
		end)
	end,
	cancel = function() end,
}

local requireModule
if opts.bundle then
	local chunk = assert(loadfile(opts.bundle))
	_G.plugin = nil
	requireModule = chunk().require
else
	RUNBOX_BUILD_LIBRARY = true
	local Build = dofile(here .. "/../build.lua")
	requireModule = Build.load(here .. "/../src")
end
local Tools = requireModule("Tools")
local Main = requireModule("Main")

local tools = {
	get = function(name)
		local entry = Tools.get(name)
		if entry == nil then
			return nil
		end
		if name == opts.fail then
			return { readOnly = entry.readOnly, run = function()
				error("injected failure in " .. name, 0)
			end }
		end
		if name == opts.dieOn then
			return { readOnly = entry.readOnly, run = function(args, ctx)
				say("dying while holding " .. name)
				os.exit(3)
			end }
		end
		return entry
	end,
}

-- The place identity and the DataModel's role live in the fake DataModel itself.
local game = place.game
Fake.state[game].props.Name = opts.placeName
Fake.state[game].props.PlaceId = opts.placeId
local modes = { edit = "edit", server = "play_server", client = "play_client" }
if modes[opts.role] == nil then
	usage("--role must be edit, server or client")
end
Fake.state[game:GetService("RunService")].mode = modes[opts.role]

local settings = { RunboxUrl = opts.url, RunboxAutoConnect = true, RunboxConnected = true, RunboxToken = opts.token }
local plugin = X.fakePlugin(settings)
local guidN = 0
local env = X.env({
	sched = sched,
	request = request,
	tools = tools,
	game = game,
	guid = function()
		if opts.instance then
			return opts.instance
		end
		guidN = guidN + 1
		return string.format("{%08x-0000-4000-8000-%012d}", math.floor(socket.gettime()) % 4294967296, guidN)
	end,
	log = function(message)
		io.stderr:write("run_plugin: " .. message .. "\n")
	end,
})
-- The fake DataModel's enums where it has them (its ChangeHistoryService checks the type),
-- the runtime's own for the widget's.
env.Enum = setmetatable({}, {
	__index = function(_, k)
		local ok, e = pcall(function()
			return _G.Enum[k]
		end)
		if ok and e ~= nil then
			return e
		end
		return X.Enum[k]
	end,
})
env.random = math.random

-- Report commands and state changes as they happen.
local realTools = env.tools
env.tools = {
	get = function(name)
		local entry = realTools.get(name)
		if entry == nil then
			return nil
		end
		return {
			readOnly = entry.readOnly,
			mode = entry.mode,
			run = function(args, ctx)
				say("command " .. name)
				return entry.run(args, ctx)
			end,
		}
	end,
}

local main = Main.start(plugin, env)
say("polling " .. opts.url .. " as " .. main.instanceId .. " (" .. opts.role .. ")")
local lastState = nil
sched.spawn(function()
	while true do
		if main.bridge.state ~= lastState then
			lastState = main.bridge.state
			say(lastState .. (main.bridge.detail and (": " .. main.bridge.detail) or ""))
		end
		sched.wait(0.05)
	end
end)

-- stdin: EOF or "quit" unloads the plugin (POST /disconnect) and exits.
local stdin = { getfd = function() return 0 end, dirty = function() return false end }
sched.spawn(function()
	while true do
		sched.waitIo(stdin, "r", nil)
		local line = io.read("*l")
		if line == nil or line == "quit" then
			plugin.Unloading:Fire()
			say("disconnected")
			os.exit(0)
		end
		-- A barrier for tests: every line printed before this one is on stdout ahead of it.
		local mark = string.match(line, "^sync (%S+)$")
		if mark then
			say("sync " .. mark)
		end
	end
end)

sched.run(nil)
