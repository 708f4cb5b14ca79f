-- tests/fake/luau.lua - the Luau library extras the plugin uses, for lua5.1: string.split,
-- table.find, table.clear, table.pack/unpack, math.clamp, math.round, a deterministic task
-- library (a virtual clock and a timer queue driven by coroutines) and RBXScriptSignal.
--
-- task.spawn runs its function at once in a new coroutine (as Roblox does, until it yields);
-- task.wait(t) inside a coroutine parks it until the virtual clock reaches now+t; in the main
-- thread it just advances the clock. task.delay queues a function. L.runUntilIdle() / L.advance(t)
-- move the clock and resume what is due, in time order, so tests are exact and instant.

local L = {}

function string.split(s, sep)
	sep = sep or ","
	local out = {}
	if sep == "" then
		for i = 1, #s do
			out[i] = s:sub(i, i)
		end
		return out
	end
	local start = 1
	while true do
		local i, j = s:find(sep, start, true)
		if not i then
			table.insert(out, s:sub(start))
			break
		end
		table.insert(out, s:sub(start, i - 1))
		start = j + 1
	end
	return out
end

function table.find(t, v, init)
	for i = init or 1, #t do
		if t[i] == v then
			return i
		end
	end
	return nil
end

function table.clear(t)
	for k in pairs(t) do
		t[k] = nil
	end
end

function table.pack(...)
	return { n = select("#", ...), ... }
end
table.unpack = unpack

function math.clamp(x, lo, hi)
	if lo > hi then
		error("max must be greater than or equal to min", 2)
	end
	if x < lo then
		return lo
	elseif x > hi then
		return hi
	end
	return x
end

function math.round(x)
	if x >= 0 then
		return math.floor(x + 0.5)
	end
	return -math.floor(-x + 0.5)
end

---------------------------------------------------------------- task
local now = 0
local seq = 0
local timers = {} -- {at, seq, co | fn, args}

function L.now()
	return now
end

local function schedule(at, co, fn, args)
	seq = seq + 1
	table.insert(timers, { at = at, seq = seq, co = co, fn = fn, args = args })
end

-- The task thread being run (the root coroutine: a yield inside ypcall travels up to it, and
-- resuming it travels back down).
local current = nil

local function resume(co, ...)
	local prev = current
	current = co
	local ok, err = coroutine.resume(co, ...)
	current = prev
	if not ok then
		-- Roblox prints errors of spawned threads; tests see them through L.errors
		table.insert(L.errors, tostring(err))
	end
end
L.errors = {}

local task = {}
function task.spawn(f, ...)
	local co = type(f) == "thread" and f or coroutine.create(f)
	resume(co, ...)
	return co
end
function task.defer(f, ...)
	local co = coroutine.create(f)
	schedule(now, co, nil, table.pack(...))
	return co
end
function task.delay(t, f, ...)
	local co = coroutine.create(f)
	schedule(now + (t or 0), co, nil, table.pack(...))
	return co
end
function task.wait(t)
	t = t or 0
	local co = current
	if co == nil or coroutine.running() == nil then
		L.advance(t)
		return t
	end
	schedule(now + t, co, nil, { n = 0 })
	coroutine.yield()
	return t
end
function task.cancel(co)
	for i = #timers, 1, -1 do
		if timers[i].co == co then
			table.remove(timers, i)
		end
	end
end
L.task = task

-- Parks the running coroutine until L.wake(key, ...) (used by fake yielding services).
function L.park(key)
	local co = current
	if co == nil or coroutine.running() == nil then
		return nil
	end
	L.parked = L.parked or {}
	L.parked[key] = co
	return coroutine.yield()
end
-- Whether L.park can park the running code (it runs in a task thread of this scheduler).
function L.canPark()
	return current ~= nil and coroutine.running() ~= nil
end
function L.wake(key, ...)
	local co = L.parked and L.parked[key]
	if co then
		L.parked[key] = nil
		resume(co, ...)
		return true
	end
	return false
end

local function popDue(limit)
	local best
	for i, tm in ipairs(timers) do
		if tm.at <= limit and (best == nil or tm.at < timers[best].at
			or (tm.at == timers[best].at and tm.seq < timers[best].seq)) then
			best = i
		end
	end
	if best then
		return table.remove(timers, best)
	end
	return nil
end

-- Moves the virtual clock forward by dt, resuming everything due on the way.
function L.advance(dt)
	local target = now + (dt or 0)
	while true do
		local tm = popDue(target)
		if not tm then
			break
		end
		if tm.at > now then
			now = tm.at
		end
		resume(tm.co, unpack(tm.args, 1, tm.args.n))
	end
	now = target
end

-- Runs timers until none is left, maxTime of virtual time has passed, or done() is true.
function L.runUntilIdle(maxTime, done)
	local limit = now + (maxTime or 3600)
	while #timers > 0 and not (done and done()) do
		local tm = popDue(limit)
		if not tm then
			break
		end
		if tm.at > now then
			now = tm.at
		end
		resume(tm.co, unpack(tm.args, 1, tm.args.n))
	end
end

function L.reset()
	now = 0
	timers = {}
	L.errors = {}
	L.parked = {}
end

---------------------------------------------------------------- yieldable pcall
-- Luau's pcall lets the protected function yield (task.wait, Async calls); lua5.1's does not
-- ("attempt to yield across metamethod/C-call boundary"). Inside a coroutine this runs f in its
-- own coroutine and passes its yields through to the caller's scheduler.
local rawpcall = pcall
local function pack(...)
	return { n = select("#", ...), ... }
end
function L.ypcall(f, ...)
	-- C functions cannot become coroutines in 5.1 (and never yield): call them directly
	if coroutine.running() == nil or type(f) ~= "function" or debug.getinfo(f, "S").what == "C" then
		return rawpcall(f, ...)
	end
	local co = coroutine.create(f)
	local args = pack(...)
	while true do
		local res = pack(coroutine.resume(co, unpack(args, 1, args.n)))
		if coroutine.status(co) == "dead" then
			return unpack(res, 1, res.n)
		end
		args = pack(coroutine.yield(unpack(res, 2, res.n)))
	end
end

---------------------------------------------------------------- signals
local Signal = {}
Signal.__index = Signal
function L.signal()
	return setmetatable({ handlers = {} }, Signal)
end
function Signal:Connect(fn)
	local entry = { fn = fn, connected = true }
	table.insert(self.handlers, entry)
	return {
		Connected = true,
		Disconnect = function(conn)
			entry.connected = false
			conn.Connected = false
		end,
	}
end
function Signal:Fire(...)
	for _, h in ipairs(self.handlers) do
		if h.connected then
			h.fn(...)
		end
	end
end

return L
