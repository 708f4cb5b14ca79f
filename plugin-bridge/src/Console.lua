-- Console.lua: Studio's Output (LogService.MessageOut) batched to the daemon's POST /console.
--
-- Requests are spent only when there is something to send: the first entry into an empty buffer
-- arms one timer (interval seconds, ~1 s), and a buffer that reaches maxBatch entries is sent at
-- once - but never two batches within one interval, so even a script printing in a tight loop
-- costs at most one request a second. An idle Studio sends nothing. While the bridge is not connected entries wait in a bounded
-- buffer (the oldest are dropped, and the loss is reported in the next batch) and go out once it
-- is. The plugin's own messages (prefixed "[Runbox]") are not forwarded: the daemon already knows
-- them, and forwarding could loop.

local Console = {}
Console.__index = Console

Console.PREFIX = "[Runbox]"

-- Enum.MessageType item names to the daemon's console levels.
local LEVELS = {
	MessageOutput = "log",
	MessageInfo = "info",
	MessageWarning = "warn",
	MessageError = "error",
}

function Console.levelOf(messageType)
	local name = messageType
	if type(messageType) ~= "string" then
		local ok, n = pcall(function()
			return messageType.Name
		end)
		name = ok and n or tostring(messageType)
	end
	name = string.gsub(tostring(name), "^Enum%.MessageType%.", "")
	return LEVELS[name] or "log"
end

-- opts.send(entries) -> true | false, reason: posts one batch (the bridge builds the body).
-- opts.spawn(fn), opts.wait(seconds), opts.now() -> unix seconds (entry time stamps),
-- opts.clock() -> seconds (pacing), opts.interval (1),
-- opts.maxBatch (50), opts.maxBuffer (1000), opts.retryDelay (5).
function Console.new(opts)
	local self = setmetatable({}, Console)
	self.send = assert(opts.send, "Console.new: send required")
	self.spawn = assert(opts.spawn, "Console.new: spawn required")
	self.wait = assert(opts.wait, "Console.new: wait required")
	self.now = opts.now or os.time
	self.clock = opts.clock or os.clock
	self.lastSend = nil -- clock() of the last batch sent
	self.interval = opts.interval or 1
	self.maxBatch = opts.maxBatch or 50
	self.maxBuffer = opts.maxBuffer or 1000
	self.retryDelay = opts.retryDelay or 5
	self.buffer = {}
	self.dropped = 0
	self.enabled = false -- true while the bridge is connected
	self.armed = false -- a timer is pending
	self.sending = false -- a batch is in flight
	self.batches = 0 -- batches sent (tests)
	return self
end

-- Records one Output line. Never yields: it runs inside LogService's signal.
function Console:push(level, message, ts)
	message = tostring(message)
	if string.sub(message, 1, #Console.PREFIX) == Console.PREFIX then
		return
	end
	if #self.buffer >= self.maxBuffer then
		table.remove(self.buffer, 1)
		self.dropped = self.dropped + 1
	end
	table.insert(self.buffer, { level = level, message = message, ts = ts or self.now() })
	self:schedule()
end

-- Connects to LogService.MessageOut; returns the connection.
function Console:attach(logService)
	local console = self
	return logService.MessageOut:Connect(function(message, messageType)
		console:push(Console.levelOf(messageType), message)
	end)
end

-- Starts sending (the bridge connected) or stops (it disconnected); entries are kept.
function Console:setEnabled(enabled)
	self.enabled = enabled and true or false
	if self.enabled then
		self:schedule()
	end
end

-- Arms the timer or sends at once, whichever the buffer calls for.
function Console:schedule()
	if not self.enabled or self.sending or #self.buffer == 0 then
		return
	end
	if #self.buffer >= self.maxBatch then
		local console = self
		self.spawn(function()
			console:flush()
		end)
		return
	end
	self:arm(self.interval)
end

function Console:arm(delay)
	if self.armed then
		return
	end
	self.armed = true
	local console = self
	self.spawn(function()
		console.wait(delay)
		console.armed = false
		console:flush()
	end)
end

-- Sends up to maxBatch entries (at most one batch per interval); on failure puts them back and
-- retries later.
function Console:flush()
	if not self.enabled or self.sending or #self.buffer == 0 then
		return
	end
	if self.lastSend ~= nil then
		local since = self.clock() - self.lastSend
		if since < self.interval then
			self:arm(self.interval - since)
			return
		end
	end
	self.sending = true
	local batch = {}
	if self.dropped > 0 then
		table.insert(batch, {
			level = "warn",
			message = Console.PREFIX .. " " .. self.dropped .. " Output lines were dropped while the daemon was away",
			ts = self.now(),
		})
	end
	local dropped = self.dropped
	self.dropped = 0
	while #batch < self.maxBatch and #self.buffer > 0 do
		table.insert(batch, table.remove(self.buffer, 1))
	end
	self.lastSend = self.clock()
	local ok = self.send(batch)
	self.sending = false
	if ok then
		self.batches = self.batches + 1
		self:schedule()
		return
	end
	-- Put the batch back in front (minus our own note) and try again after a pause.
	local first = dropped > 0 and 2 or 1
	for i = #batch, first, -1 do
		table.insert(self.buffer, 1, batch[i])
	end
	self.dropped = dropped
	while #self.buffer > self.maxBuffer do
		table.remove(self.buffer, 1)
		self.dropped = self.dropped + 1
	end
	self:arm(self.retryDelay)
end

return Console
